#include "vigil/report/status.h"

#include <gtest/gtest.h>

namespace vigil {

TEST(Status, round_trips_through_strings) {
  for (Status s : {Status::kPass, Status::kWarn, Status::kFail, Status::kError, Status::kSkipped}) {
    EXPECT_EQ(value_of(kStatusNames, to_string(s)), s);
  }
  EXPECT_FALSE(value_of(kStatusNames, "FAIL").has_value());
  EXPECT_FALSE(value_of(kStatusNames, "").has_value());
}

TEST(Status, fail_outranks_error_outranks_warn_outranks_pass) {
  EXPECT_EQ(combine(Status::kPass, Status::kWarn), Status::kWarn);
  EXPECT_EQ(combine(Status::kWarn, Status::kError), Status::kError);
  EXPECT_EQ(combine(Status::kError, Status::kFail), Status::kFail);
  EXPECT_EQ(combine(Status::kFail, Status::kPass), Status::kFail);
  EXPECT_EQ(combine(Status::kSkipped, Status::kPass), Status::kPass);
  EXPECT_EQ(combine(Status::kSkipped, Status::kSkipped), Status::kSkipped);
}

TEST(Status, exit_codes_match_the_documented_contract) {
  EXPECT_EQ(exit_code_for(Status::kPass), 0);
  EXPECT_EQ(exit_code_for(Status::kSkipped), 0);
  EXPECT_EQ(exit_code_for(Status::kFail), 1);
  EXPECT_EQ(exit_code_for(Status::kWarn), 2);
  EXPECT_EQ(exit_code_for(Status::kError), 3);
}

}  // namespace vigil
