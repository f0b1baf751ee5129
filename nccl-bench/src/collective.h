#pragma once
// The per-collective surface (style.md rule 4): what a collective is (bytes, busbw factor, its
// seeded input and expected output) and how to launch it on a backend. Everything else
// (timing, warm-up, data check, MPI, output) lives once in harness.cpp. all_gather or
// reduce_scatter would be one more small file like all_reduce.cpp.
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "backend.h"
#include "vigil/base/result.h"
#include "vigil/ncclbench/options.h"

namespace vigil::ncclbench {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual std::string_view name() const = 0;   // "all_reduce"
  virtual std::string_view redop() const = 0;  // "sum"
  virtual int root() const { return -1; }
  virtual double busbw_factor(int nranks) const = 0;
  // Elements per rank for a message of `bytes`.
  virtual std::uint64_t count(std::uint64_t bytes, std::size_t elem_size) const = 0;
  // Seeded input of `rank` for elements [first, first + out.size()).
  virtual void input(int rank, std::uint64_t seed, std::uint64_t first,
                     std::span<float> out) const = 0;
  // What every rank must hold afterwards for elements [first, first + out.size()).
  virtual void expected(int nranks, std::uint64_t seed, std::uint64_t first,
                        std::span<float> out) const = 0;
  // Enqueues one operation (send == recv: in-place). Completion is CommBackend::wait().
  virtual VoidResult run(CommBackend& backend, const void* send, void* recv, std::uint64_t count,
                         DataType type) const = 0;
};

std::unique_ptr<Collective> make_all_reduce();

}  // namespace vigil::ncclbench
