#include "vigil/drainer/run_ids.h"

#include <openssl/sha.h>

namespace vigil::drainer {

uint64_t RunIdWindow::digest(std::string_view run_id) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(run_id.data()), run_id.size(), md);
  uint64_t d = 0;
  for (int i = 0; i < 8; ++i) d = (d << 8) | md[i];
  return d;
}

bool RunIdWindow::contains(uint64_t d) const {
  for (size_t i = 0; i < size_; ++i)
    if (at(i) == d) return true;
  return false;
}

void RunIdWindow::add(uint64_t d) {
  if (size_ == kCapacity) {
    ring_[first_] = d;  // the oldest slot becomes the newest
    first_ = (first_ + 1) % kCapacity;
    return;
  }
  at(size_++) = d;
}

void RunIdWindow::remove(uint64_t d) {
  for (size_t i = 0; i < size_; ++i) {
    if (at(i) != d) continue;
    for (size_t j = i; j + 1 < size_; ++j) at(j) = at(j + 1);
    --size_;
    return;
  }
}

std::string RunIdWindow::encode() const {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(size_ * 16, '0');
  for (size_t i = 0; i < size_; ++i) {
    const uint64_t d = at(i);
    for (int k = 0; k < 16; ++k) out[i * 16 + k] = kHex[(d >> (60 - 4 * k)) & 15];
  }
  return out;
}

Result<RunIdWindow> RunIdWindow::decode(std::string_view text) {
  if (text.size() % 16 != 0 || text.size() / 16 > kCapacity)
    return Error{"expected up to " + std::to_string(kCapacity) + " digests of 16 hex digits, got " +
                     std::to_string(text.size()) + " characters",
                 "run id window"};
  RunIdWindow w;
  for (size_t i = 0; i < text.size(); i += 16) {
    uint64_t d = 0;
    for (size_t k = 0; k < 16; ++k) {
      const char c = text[i + k];
      const int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (v < 0)
        return Error{"not a lower-case hex digit at offset " + std::to_string(i + k),
                     "run id window"};
      d = (d << 4) | static_cast<uint64_t>(v);
    }
    w.add(d);
  }
  return w;
}

}  // namespace vigil::drainer
