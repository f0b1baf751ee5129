// The /dev/kmsg record reader and cursor, against plain files in the kmsg record format.
#include "passive/kmsg_reader.h"

#include <gtest/gtest.h>

#include <fstream>

#include "temp_dir.h"

namespace vigil::kmsg {

using testing::TempDir;

TEST(KmsgRecord, parses_prefix_fields_and_keeps_the_message) {
  auto r = parse_record("4,1234,5678901,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->seq, 1234u);
  EXPECT_EQ(r->message, "NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen");
  // Extra prefix fields (newer kernels add a caller id) are allowed.
  auto extra = parse_record("6,7,8,c,caller=T12;hello");
  ASSERT_TRUE(extra);
  EXPECT_EQ(extra->seq, 7u);
  EXPECT_EQ(extra->message, "hello");
}

TEST(KmsgRecord, malformed_lines_are_rejected) {
  for (const char* bad : {"", "no semicolon", "4,x,5,-;msg", "4,12;msg", "a,1,2,-;m", "4,-1,2,-;m"})
    EXPECT_FALSE(parse_record(bad)) << bad;
}

TEST(KmsgXidLine, parses_the_driver_line_in_both_device_spellings) {
  auto x = parse_xid(
      "NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus.");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->xid, 79u);
  EXPECT_EQ(x->device, "0000:18:00");
  EXPECT_EQ(x->detail, "pid=1234, name=python, GPU has fallen off the bus.");
  auto old = parse_xid("NVRM: Xid (0000:3b:00): 48, An uncorrectable double bit error");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->xid, 48u);
  EXPECT_EQ(old->device, "0000:3b:00");
  EXPECT_FALSE(parse_xid("NVRM: loading NVIDIA UNIX x86_64 Kernel Module"));
  EXPECT_FALSE(parse_xid("NVRM: Xid (PCI:0000:18:00): notanumber, x"));
  EXPECT_FALSE(parse_xid("NVRM: Xid (PCI:0000:18:00 79"));
}

TEST(KmsgRead, keeps_records_after_the_cursor_skips_continuations_and_counts_malformed) {
  TempDir d;
  const std::string path = d.write("kmsg",
                                   "6,1,100,-;first\n"
                                   " SUBSYSTEM=pci\n"
                                   " DEVICE=+pci:0000:18:00.0\n"
                                   "garbage line\n"
                                   "6,2,200,-;second\n"
                                   "6,3,300,-;third\n");
  auto all = read_records(path, 0);
  ASSERT_TRUE(all) << all.error().to_string();
  ASSERT_EQ(all->records.size(), 3u);
  EXPECT_EQ(all->first_seq, 1u);
  EXPECT_EQ(all->last_seq, 3u);
  EXPECT_EQ(all->malformed, 1);
  auto after = read_records(path, 2);
  ASSERT_TRUE(after);
  ASSERT_EQ(after->records.size(), 1u);
  EXPECT_EQ(after->records[0].message, "third");
}

TEST(KmsgRead, a_partial_last_line_is_left_for_the_next_run) {
  TempDir d;
  const std::string path = d.write("kmsg", "6,1,100,-;done\n6,2,200,-;NVRM: Xid (PCI:0000:18");
  auto s = read_records(path, 0);
  ASSERT_TRUE(s);
  ASSERT_EQ(s->records.size(), 1u);
  EXPECT_EQ(s->last_seq, 1u);  // the cursor will not move past the unfinished record
  EXPECT_EQ(s->malformed, 0);
}

TEST(KmsgRead, a_missing_log_is_an_error_naming_it) {
  auto s = read_records("/nonexistent/kmsg", 0);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().to_string().find("/nonexistent/kmsg"), std::string::npos);
}

TEST(KmsgCursor, round_trips_and_a_malformed_file_is_an_error) {
  TempDir d;
  const std::string path = d.file("state/kmsg_xid.gpu-0.json");
  auto first = load_cursor(path);
  ASSERT_TRUE(first);
  EXPECT_FALSE(first->last_seq);
  ASSERT_TRUE(save_cursor(path, Cursor{"boot-1", 42, {"XID 79 0000:18:00"}}));
  auto again = load_cursor(path);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->boot_id, "boot-1");
  EXPECT_EQ(again->last_seq, 42u);
  EXPECT_EQ(again->fatal, std::vector<std::string>{"XID 79 0000:18:00"});
  std::ofstream(path) << "{not json";
  auto bad = load_cursor(path);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().to_string().find(path), std::string::npos);
}

}  // namespace vigil::kmsg
