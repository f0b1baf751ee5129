#pragma once
// The outbox: every intent owed to a sink and not yet done, by id (so in the order the decisions
// were made), which of them a sink has in hand, and the next intent id. Plain state without a
// lock of its own: the drainer core guards it with mu_, the node table's lock, because a
// decision's new record and the intents it owes are applied, snapshotted and replayed together.
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "vigil/drainer/intent.h"

namespace vigil::drainer {

class Outbox {
 public:
  uint64_t take_id() { return next_id_++; }
  uint64_t next_id() const { return next_id_; }
  // A snapshot's next id, never below an owed intent's: no id is ever given twice.
  void restore_next_id(uint64_t id);

  // Owed from now on (a decision's intents, or ones replayed); no later id reuses theirs.
  void add(const std::vector<Intent>& intents);
  void add(Intent i);
  // Done (applied, skipped, given up or superseded): no longer owed.
  void done(const std::vector<uint64_t>& ids);
  // Back from the sink unfinished: owed again, one attempt more.
  void retry(const std::vector<uint64_t>& ids);

  // The next batch for sink `kind`, marked in hand. An ordered sink (events) gets each node's
  // oldest, and nothing of a node while one of its intents is in hand; any other sink converges
  // to a state, so it gets each node's newest and the older ones go to `superseded`.
  std::vector<Intent> pick(SinkKind kind, bool ordered, std::vector<uint64_t>& superseded);

  bool has_work(SinkKind kind) const;  // an intent owed and not in hand
  size_t count(SinkKind kind) const;   // owed, in hand or not
  // Whether an intent for `node` owed to `kind` is newer than intent `id`.
  bool newer(SinkKind kind, const std::string& node, uint64_t id) const;
  const std::map<uint64_t, Intent>& owed() const { return owed_; }
  std::vector<Intent> intents() const;

 private:
  std::map<uint64_t, Intent> owed_;
  std::set<uint64_t> in_hand_;
  uint64_t next_id_ = 1;
};

}  // namespace vigil::drainer
