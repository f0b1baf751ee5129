// The idempotency window of one node (run_ids.h).
#include "vigil/drainer/run_ids.h"

#include <gtest/gtest.h>

namespace vigil::drainer {
namespace {

uint64_t d(int i) { return RunIdWindow::digest("run-" + std::to_string(i)); }

TEST(RunIdWindow, keeps_the_last_256_and_forgets_the_oldest) {
  RunIdWindow w;
  for (int i = 0; i < 300; ++i) w.add(d(i));
  EXPECT_EQ(w.size(), RunIdWindow::kCapacity);
  EXPECT_FALSE(w.contains(d(0)));
  EXPECT_FALSE(w.contains(d(43)));
  EXPECT_TRUE(w.contains(d(44)));
  EXPECT_TRUE(w.contains(d(299)));
  EXPECT_FALSE(w.contains(d(300)));
}

TEST(RunIdWindow, digests_are_stable_and_tell_ids_apart) {
  EXPECT_EQ(RunIdWindow::digest("abc"), RunIdWindow::digest(std::string("abc")));
  // SHA-256("abc") starts ba7816bf8f01cfea: the digest must not change between builds, or a
  // restarted drainer would take every retried report for a new one.
  EXPECT_EQ(RunIdWindow::digest("abc"), 0xba7816bf8f01cfeaull);
  EXPECT_NE(RunIdWindow::digest("run-1"), RunIdWindow::digest("run-2"));
}

TEST(RunIdWindow, remove_takes_out_one_id_and_keeps_the_order) {
  RunIdWindow w;
  for (int i = 0; i < 5; ++i) w.add(d(i));
  w.remove(d(2));
  w.remove(d(99));  // absent: nothing happens
  EXPECT_EQ(w.size(), 4u);
  EXPECT_FALSE(w.contains(d(2)));
  RunIdWindow expect;
  for (int i : {0, 1, 3, 4}) expect.add(d(i));
  EXPECT_EQ(w.encode(), expect.encode());
  // Also once the ring has wrapped.
  RunIdWindow full;
  for (int i = 0; i < 260; ++i) full.add(d(i));
  full.remove(d(259));
  EXPECT_EQ(full.size(), RunIdWindow::kCapacity - 1);
  full.add(d(1000));
  EXPECT_TRUE(full.contains(d(4)));
  EXPECT_TRUE(full.contains(d(1000)));
}

TEST(RunIdWindow, encode_and_decode_round_trip_oldest_first) {
  RunIdWindow w;
  for (int i = 0; i < 270; ++i) w.add(d(i));
  const std::string text = w.encode();
  EXPECT_EQ(text.size(), 256u * 16);
  auto back = RunIdWindow::decode(text);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->encode(), text);
  back->add(d(270));  // the oldest kept one (14) goes first
  EXPECT_FALSE(back->contains(d(14)));
  EXPECT_TRUE(back->contains(d(15)));
  EXPECT_EQ(RunIdWindow::decode("").value().size(), 0u);
}

TEST(RunIdWindow, decode_names_what_is_wrong) {
  auto odd = RunIdWindow::decode("0123");
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("16 hex digits, got 4 characters"), std::string::npos);
  auto bad = RunIdWindow::decode("0123456789abcdeG");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("offset 15"), std::string::npos) << bad.error().message;
  auto big = RunIdWindow::decode(std::string(257 * 16, 'a'));
  EXPECT_FALSE(big.ok());
}

}  // namespace
}  // namespace vigil::drainer
