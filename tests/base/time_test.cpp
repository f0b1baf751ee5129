#include "vigil/base/time.h"

#include <gtest/gtest.h>

namespace vigil {
namespace {

TEST(Rfc3339, parses_utc_offsets_and_fractions) {
  EXPECT_EQ(parse_rfc3339("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(parse_rfc3339("2026-11-21T10:00:00.123Z"), parse_rfc3339("2026-11-21T10:00:00Z"));
  EXPECT_EQ(parse_rfc3339("2026-11-21T11:00:00+01:00"), parse_rfc3339("2026-11-21T10:00:00Z"));
  EXPECT_FALSE(parse_rfc3339("2026-11-21 10:00:00"));
  EXPECT_FALSE(parse_rfc3339("2026-13-21T10:00:00Z"));
  EXPECT_EQ(rfc3339_utc(*parse_rfc3339("2026-11-21T10:00:00Z")), "2026-11-21T10:00:00Z");
}

TEST(Rfc3339, compact_form_is_the_same_instant) {
  EXPECT_EQ(compact_utc(*parse_rfc3339("2026-11-21T10:00:05Z")), "20261121T100005Z");
  EXPECT_TRUE(parse_rfc3339(rfc3339_now()));
}

}  // namespace
}  // namespace vigil
