// Slurm's one-node name rules (libs/base slurm_names): the keywords and the suffix libslurm's
// hostlist cannot hold; ordinary names pass.
#include "vigil/base/slurm_names.h"

#include <gtest/gtest.h>

namespace vigil {
namespace {

TEST(slurm_names, keywords_in_any_case_are_not_node_names) {
  for (const char* k : {"ALL", "all", "All", "DEFAULT", "default"}) {
    auto why = slurm_name_problem(k);
    ASSERT_TRUE(why) << k;
    EXPECT_NE(why->find("Slurm keyword"), std::string::npos) << *why;
  }
  EXPECT_NE(slurm_name_problem("all")->find("every node"), std::string::npos);
}

TEST(slurm_names, a_suffix_of_more_than_18_digits_is_refused) {
  EXPECT_FALSE(slurm_name_problem("u222222222222222222"));  // 18 digits
  auto why = slurm_name_problem("u2222222222222222222");    // 19
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("18 digits"), std::string::npos);
}

TEST(slurm_names, ordinary_names_pass) {
  for (const char* n : {"gpu-0", "node001", "allnodes", "ALL1", "a", "dgx-h100-17.cluster"})
    EXPECT_FALSE(slurm_name_problem(n)) << n;
}

}  // namespace
}  // namespace vigil
