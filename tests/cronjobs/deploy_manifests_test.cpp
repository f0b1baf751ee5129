// cronjobs/ (kustomize) as an admin deploys it: every manifest parses, `kubectl kustomize`
// builds, every built object validates against the upstream Kubernetes schema
// (kubernetes-models, tests/k8s-validate), the RBAC grants exactly the documented permissions,
// the manual-run command works (real kubectl against a read-only fake API server), and the
// thresholds copy matches checks/thresholds. Needs kubectl and node (scripts/install-deps.sh).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "background_process.h"
#include "run_command.h"
#include "test_pki.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using vigil::testing::run_command;

namespace {

vigil::testing::CommandOptions opts(std::chrono::seconds timeout,
                                    std::map<std::string, std::string> env = {}) {
  vigil::testing::CommandOptions o;
  o.timeout = timeout;
  o.env = std::move(env);
  return o;
}

const std::string kSrc = VIGIL_SOURCE_DIR;
const std::string kCron = kSrc + "/cronjobs";
const std::string kValidator = kSrc + "/tests/k8s-validate";

class Scratch {
 public:
  Scratch() {
    char tmpl[] = "/tmp/vigil-manifests-test.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp");
    path_ = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// kubectl kustomize DIR -> the objects (and the text in *text).
std::vector<YAML::Node> build(const std::string& dir, std::string* text = nullptr) {
  const auto r = run_command({"kubectl", "kustomize", dir}, opts(60s));
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  if (text) *text = r.out;
  return YAML::LoadAll(r.out);
}

// An overlay of the base plus components, in a scratch dir (a symlink keeps the load restrictor
// happy: everything is under the overlay's root).
std::string overlay(const Scratch& s, const std::vector<std::string>& components) {
  const std::string dir = s.file("overlay");
  fs::create_directories(dir);
  fs::create_directory_symlink(kCron, dir + "/base");
  std::ofstream k(dir + "/kustomization.yaml");
  k << "resources: [base]\ncomponents:\n";
  for (const auto& c : components) k << "  - base/components/" << c << "\n";
  return dir;
}

vigil::testing::CommandResult validate(const std::string& yaml_file) {
  return run_command({"node", kValidator + "/validate.mjs", yaml_file}, opts(60s));
}

bool validator_installed() { return fs::exists(kValidator + "/node_modules/kubernetes-models"); }

const YAML::Node* find(const std::vector<YAML::Node>& objs, const std::string& kind,
                       const std::string& name) {
  for (const auto& o : objs) {
    if (o["kind"].as<std::string>() == kind && o["metadata"]["name"].as<std::string>() == name)
      return &o;
  }
  return nullptr;
}

// Every permission granted by the Roles/ClusterRoles: "ns|apiGroup|resource|verb".
std::set<std::string> grants(const std::vector<YAML::Node>& objs) {
  std::set<std::string> out;
  for (const auto& o : objs) {
    const auto kind = o["kind"].as<std::string>();
    if (kind != "Role" && kind != "ClusterRole") continue;
    const std::string ns = kind == "Role" ? o["metadata"]["namespace"].as<std::string>() : "*";
    for (const auto& rule : o["rules"]) {
      EXPECT_FALSE(rule["resourceNames"]) << "unexpected resourceNames";
      EXPECT_FALSE(rule["nonResourceURLs"]) << "unexpected nonResourceURLs";
      for (const auto& g : rule["apiGroups"])
        for (const auto& r : rule["resources"])
          for (const auto& v : rule["verbs"])
            out.insert(ns + "|" + g.as<std::string>() + "|" + r.as<std::string>() + "|" +
                       v.as<std::string>());
    }
  }
  return out;
}

TEST(Manifests, every_yaml_file_in_cronjobs_parses) {
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(kCron)) {
    if (e.path().extension() != ".yaml") continue;
    ++files;
    EXPECT_NO_THROW({
      const auto docs = YAML::LoadAllFromFile(e.path().string());
      EXPECT_FALSE(docs.empty()) << e.path();
    }) << e.path();
  }
  EXPECT_GE(files, 15);
}

TEST(Manifests, kustomize_builds_and_every_object_validates_against_the_upstream_schema) {
  ASSERT_TRUE(validator_installed())
      << "run scripts/install-deps.sh (npm ci in tests/k8s-validate)";
  Scratch s;
  for (const auto& components :
       std::vector<std::vector<std::string>>{{},
                                             {"node-conditions"},
                                             {"pod-lookup"},
                                             {"node-conditions", "pod-lookup"},
                                             {"ingest-tls"}}) {
    std::string text;
    const auto objs = build(components.empty() ? kCron : overlay(s, components), &text);
    fs::remove_all(s.file("overlay"));
    std::ofstream(s.file("built.yaml")) << text;
    const auto r = validate(s.file("built.yaml"));
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    EXPECT_NE(r.out.find(std::to_string(objs.size()) + " objects, 0 invalid"), std::string::npos)
        << r.out;
  }
  const auto base = build(kCron);
  for (const auto& [kind, name] : std::vector<std::pair<std::string, std::string>>{
           {"CronJob", "vigil-healthcheck"},
           {"CronJob", "vigil-requalify"},
           {"Deployment", "vigil-drainer"},
           {"Service", "vigil-drainer"},
           {"ServiceAccount", "vigil-drainer"},
           {"ServiceAccount", "vigil-submit"},
           {"ClusterRole", "vigil-drainer"},
           {"PersistentVolumeClaim", "vigil-drainer-state"},
           {"Secret", "vigil-ingest-token"}}) {
    EXPECT_NE(find(base, kind, name), nullptr) << kind << " " << name;
  }
}

TEST(Manifests, validator_rejects_broken_objects_of_the_built_output) {
  ASSERT_TRUE(validator_installed())
      << "run scripts/install-deps.sh (npm ci in tests/k8s-validate)";
  const auto self = run_command({"node", kValidator + "/validate.mjs", "--self-test"}, opts(60s));
  EXPECT_EQ(self.exit_code, 0) << self.describe();
  // The real CronJob, broken two ways: the validator must name each violation.
  Scratch s;
  struct Breakage {
    std::string what, expected;
    void (*apply)(YAML::Node&);
  };
  const std::vector<Breakage> cases = {
      {"container without name", "must have required property name",
       [](YAML::Node& cj) {
         cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0].remove("name");
       }},
      {"schedule as a number", "schedule must be string",
       [](YAML::Node& cj) { cj["spec"]["schedule"] = 17; }},
  };
  for (const auto& c : cases) {
    auto objs = build(kCron);
    std::ofstream out(s.file("broken.yaml"));
    for (auto& o : objs) {
      if (o["kind"].as<std::string>() == "CronJob") c.apply(o);
      out << "---\n" << YAML::Dump(o) << "\n";
    }
    out.close();
    const auto r = validate(s.file("broken.yaml"));
    EXPECT_EQ(r.exit_code, 1) << c.what << "\n" << r.describe();
    EXPECT_NE(r.out.find("INVALID batch/v1 CronJob vigil/vigil-healthcheck"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find(c.expected), std::string::npos) << c.what << "\n" << r.out;
  }
}

TEST(Manifests, rbac_grants_nothing_beyond_the_documented_list) {
  Scratch s;
  const auto base = build(kCron);
  EXPECT_EQ(grants(base), (std::set<std::string>{"*||nodes|get", "*||nodes|patch"}));
  auto with = [&](const std::vector<std::string>& comps) {
    auto objs = build(overlay(s, comps));
    fs::remove_all(s.file("overlay"));
    return objs;
  };
  const auto cond = with({"node-conditions"});
  EXPECT_EQ(grants(cond),
            (std::set<std::string>{"*||nodes|get", "*||nodes|patch", "*||nodes/status|patch"}));
  const auto lookup = with({"pod-lookup"});
  EXPECT_EQ(grants(lookup),
            (std::set<std::string>{"*||nodes|get", "*||nodes|patch", "slurm||pods|get"}));
  // Bindings: only the drainer's service account, only to its own roles.
  for (const auto& objs : {base, cond, lookup}) {
    for (const auto& o : objs) {
      const auto kind = o["kind"].as<std::string>();
      if (kind != "RoleBinding" && kind != "ClusterRoleBinding") continue;
      ASSERT_EQ(o["subjects"].size(), 1u);
      EXPECT_EQ(o["subjects"][0]["name"].as<std::string>(), "vigil-drainer");
      EXPECT_EQ(o["subjects"][0]["namespace"].as<std::string>(), "vigil");
      EXPECT_EQ(o["roleRef"]["name"].as<std::string>().rfind("vigil-drainer", 0), 0u);
    }
  }
  // The submitter never talks to the Kubernetes API.
  const auto* sa = find(base, "ServiceAccount", "vigil-submit");
  ASSERT_NE(sa, nullptr);
  EXPECT_FALSE((*sa)["automountServiceAccountToken"].as<bool>());
}

TEST(Manifests, cronjob_and_drainer_carry_their_operational_guards) {
  const auto objs = build(kCron);
  const auto* cj = find(objs, "CronJob", "vigil-healthcheck");
  ASSERT_NE(cj, nullptr);
  const auto& spec = (*cj)["spec"];
  EXPECT_EQ(spec["concurrencyPolicy"].as<std::string>(), "Forbid");
  EXPECT_GT(spec["startingDeadlineSeconds"].as<int>(), 0);
  EXPECT_GT(spec["successfulJobsHistoryLimit"].as<int>(), 0);
  EXPECT_GT(spec["failedJobsHistoryLimit"].as<int>(), 0);
  EXPECT_GT(spec["jobTemplate"]["spec"]["activeDeadlineSeconds"].as<int>(), 900);
  const auto pod = spec["jobTemplate"]["spec"]["template"]["spec"];
  EXPECT_EQ(pod["containers"][0]["command"][0].as<std::string>(), "vigil-submit");
  std::set<std::string> mounts;
  for (const auto& m : pod["containers"][0]["volumeMounts"])
    mounts.insert(m["mountPath"].as<std::string>());
  EXPECT_TRUE(mounts.count("/etc/slurm") && mounts.count("/var/run/munge") &&
              mounts.count("/etc/vigil/job"));

  const auto* dep = find(objs, "Deployment", "vigil-drainer");
  ASSERT_NE(dep, nullptr);
  EXPECT_EQ((*dep)["spec"]["replicas"].as<int>(), 1);
  EXPECT_EQ((*dep)["spec"]["strategy"]["type"].as<std::string>(), "Recreate");
  const auto c = (*dep)["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"].as<std::string>(), "/readyz");
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"].as<std::string>(), "/healthz");
  bool pvc = false;
  for (const auto& v : (*dep)["spec"]["template"]["spec"]["volumes"])
    if (v["persistentVolumeClaim"])
      pvc = v["persistentVolumeClaim"]["claimName"].as<std::string>() == "vigil-drainer-state";
  EXPECT_TRUE(pvc);
  // The Secret is a placeholder, never a real token.
  const auto* secret = find(objs, "Secret", "vigil-ingest-token");
  ASSERT_NE(secret, nullptr);
  EXPECT_EQ((*secret)["stringData"]["token"].as<std::string>().rfind("REPLACE-ME", 0), 0u);
}

TEST(Manifests, manual_run_command_creates_a_job_from_the_built_cronjob) {
  ASSERT_TRUE(validator_installed())
      << "run scripts/install-deps.sh (npm ci in tests/k8s-validate)";
  Scratch s;
  std::string text;
  const auto objs = build(kCron, &text);
  std::ofstream(s.file("built.yaml")) << text;
  vigil::testing::BackgroundProcess api(
      {"node", kValidator + "/fake-apiserver.mjs", s.file("built.yaml")}, s.file("api.log"));
  const auto port = api.wait_for_log("listening on 127.0.0.1:", 30s);
  ASSERT_TRUE(port) << api.log();
  std::ofstream(s.file("kubeconfig"))
      << "apiVersion: v1\nkind: Config\nclusters: [{name: fake, cluster: {server: "
         "\"http://127.0.0.1:"
      << *port << "\"}}]\nusers: [{name: u, user: {}}]\n"
      << "contexts: [{name: c, context: {cluster: fake, user: u}}]\ncurrent-context: c\n";
  // Exactly the documented command (docs/deploy.md), with -n and a client-side dry run.
  const auto r = run_command(
      {"bash", "-c",
       "kubectl -n vigil create job --from=cronjob/vigil-healthcheck vigil-manual-$(date +%s) "
       "--dry-run=client -o yaml"},
      opts(60s, {{"KUBECONFIG", s.file("kubeconfig")}, {"HOME", s.path()}}));
  ASSERT_EQ(r.exit_code, 0) << r.describe() << api.log();
  EXPECT_NE(api.log().find("GET /apis/batch/v1/namespaces/vigil/cronjobs/vigil-healthcheck"),
            std::string::npos)
      << api.log();
  const YAML::Node job = YAML::Load(r.out);
  EXPECT_EQ(job["kind"].as<std::string>(), "Job");
  const auto name = job["metadata"]["name"].as<std::string>();
  EXPECT_EQ(name.rfind("vigil-manual-", 0), 0u);
  EXPECT_LE(name.size(), 63u);  // a DNS label (the pods get a job-name label)
  EXPECT_EQ(job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"].as<std::string>(),
            "manual");
  EXPECT_EQ(job["metadata"]["ownerReferences"][0]["name"].as<std::string>(), "vigil-healthcheck");
  const auto* cj = find(objs, "CronJob", "vigil-healthcheck");
  ASSERT_NE(cj, nullptr);
  EXPECT_EQ(YAML::Dump(job["spec"]["template"]["spec"]),
            YAML::Dump((*cj)["spec"]["jobTemplate"]["spec"]["template"]["spec"]));
  std::ofstream(s.file("job.yaml")) << r.out;
  const auto v = validate(s.file("job.yaml"));
  EXPECT_EQ(v.exit_code, 0) << v.describe();
  api.stop();
}

TEST(Manifests, threshold_copies_match_the_single_source_in_checks_thresholds) {
  const auto r = run_command({kSrc + "/scripts/sync-manifests.sh", "--check"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  int n = 0;
  for (const auto& e : fs::directory_iterator(kSrc + "/checks/thresholds")) {
    ++n;
    EXPECT_EQ(read(e.path().string()), read(kCron + "/thresholds/" + e.path().filename().string()))
        << e.path().filename();
  }
  EXPECT_GT(n, 0);
}

TEST(Manifests, drift_detection_fails_when_a_copy_differs) {
  // sync-manifests.sh --check on a scratch copy of the tree with one threshold edited.
  Scratch s;
  for (const char* d : {"checks/thresholds", "cronjobs/thresholds", "scripts"}) {
    fs::create_directories(s.file(d));
    fs::copy(kSrc + "/" + d, s.file(d), fs::copy_options::recursive);
  }
  fs::copy_file(kCron + "/kustomization.yaml", s.file("cronjobs/kustomization.yaml"));
  // Start from a synced copy (this test is about detection, not about the tree's own state).
  ASSERT_EQ(run_command({s.file("scripts/sync-manifests.sh")}).exit_code, 0);
  const auto clean = run_command({s.file("scripts/sync-manifests.sh"), "--check"});
  EXPECT_EQ(clean.exit_code, 0) << clean.describe();
  std::ofstream(s.file("checks/thresholds/h100-sxm5-80gb.yaml"), std::ios::app) << "# edited\n";
  const auto drift = run_command({s.file("scripts/sync-manifests.sh"), "--check"});
  EXPECT_EQ(drift.exit_code, 1) << drift.describe();
  EXPECT_NE(drift.err.find("h100-sxm5-80gb.yaml differs"), std::string::npos) << drift.err;
  const auto fix = run_command({s.file("scripts/sync-manifests.sh")});
  EXPECT_EQ(fix.exit_code, 0) << fix.describe();
  EXPECT_EQ(run_command({s.file("scripts/sync-manifests.sh"), "--check"}).exit_code, 0);
}

TEST(Manifests, component_configs_differ_from_the_base_only_in_their_switch) {
  const YAML::Node base = YAML::LoadFile(kCron + "/config/drainer.yaml");
  YAML::Node cond = YAML::LoadFile(kCron + "/components/node-conditions/drainer.yaml");
  YAML::Node lookup = YAML::LoadFile(kCron + "/components/pod-lookup/drainer.yaml");
  EXPECT_FALSE(base["kubernetes"]["condition"].as<bool>());
  EXPECT_TRUE(cond["kubernetes"]["condition"].as<bool>());
  cond["kubernetes"]["condition"] = false;
  EXPECT_EQ(YAML::Dump(cond), YAML::Dump(base));
  EXPECT_EQ(lookup["kubernetes"]["node_mapping"].as<std::string>(), "pod-lookup");
  EXPECT_EQ(lookup["kubernetes"]["pod_namespace"].as<std::string>(), "slurm");
  lookup["kubernetes"]["node_mapping"] = "identity";
  lookup["kubernetes"].remove("pod_namespace");
  EXPECT_EQ(YAML::Dump(lookup), YAML::Dump(base));
  YAML::Node tls = YAML::LoadFile(kCron + "/components/ingest-tls/drainer.yaml");
  EXPECT_EQ(tls["listen"]["tls"]["cert_file"].as<std::string>(), "/etc/vigil/tls/tls.crt");
  tls["listen"].remove("tls");
  EXPECT_EQ(tls["listen"].size(), base["listen"].size());
  for (const auto& kv : base["listen"])
    EXPECT_EQ(tls["listen"][kv.first.as<std::string>()].as<std::string>(),
              kv.second.as<std::string>());
  tls.remove("listen");
  YAML::Node base_rest = YAML::Clone(base);
  base_rest.remove("listen");
  EXPECT_EQ(YAML::Dump(tls), YAML::Dump(base_rest));
}

// The ingest-tls component: the Secret is mounted where drainer.yaml reads it, the probes and
// the scrape speak HTTPS, and the check jobs post to https:// with a CA file.
TEST(Manifests, ingest_tls_component_wires_secret_probes_and_report_url) {
  Scratch s;
  const auto objs = build(overlay(s, {"ingest-tls"}));
  const auto* dep = find(objs, "Deployment", "vigil-drainer");
  ASSERT_NE(dep, nullptr);
  const auto pod = (*dep)["spec"]["template"];
  EXPECT_EQ(pod["metadata"]["annotations"]["prometheus.io/scheme"].as<std::string>(), "https");
  const auto c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["scheme"].as<std::string>(), "HTTPS");
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["scheme"].as<std::string>(), "HTTPS");
  std::string tls_volume;
  for (const auto& m : c["volumeMounts"])
    if (m["mountPath"].as<std::string>() == "/etc/vigil/tls")
      tls_volume = m["name"].as<std::string>();
  ASSERT_FALSE(tls_volume.empty());
  bool secret = false;
  for (const auto& v : pod["spec"]["volumes"])
    if (v["name"].as<std::string>() == tls_volume)
      secret = v["secret"]["secretName"].as<std::string>() == "vigil-drainer-tls";
  EXPECT_TRUE(secret);
  const YAML::Node* env = nullptr;
  for (const auto& o : objs)
    if (o["kind"].as<std::string>() == "ConfigMap" &&
        o["metadata"]["name"].as<std::string>().rfind("vigil-submit-env", 0) == 0)
      env = &o;
  ASSERT_NE(env, nullptr);
  EXPECT_EQ((*env)["data"]["VIGIL_REPORT_URL"].as<std::string>().rfind("https://", 0), 0u);
  EXPECT_FALSE((*env)["data"]["VIGIL_CA_FILE"].as<std::string>().empty());
  // The re-qualifying CronJob reads the drainer at that URL and verifies it with the CA.
  const auto* rq = find(objs, "CronJob", "vigil-requalify");
  ASSERT_NE(rq, nullptr);
  const auto rq_pod = (*rq)["spec"]["jobTemplate"]["spec"]["template"]["spec"];
  std::vector<std::string> args;
  for (const auto& a : rq_pod["containers"][0]["command"]) args.push_back(a.as<std::string>());
  EXPECT_NE(std::find(args.begin(), args.end(), "--rechecks-from=$(VIGIL_REPORT_URL)"), args.end());
  EXPECT_NE(std::find(args.begin(), args.end(), "--drainer-ca-file=/etc/vigil/tls/ca.crt"),
            args.end());
  bool ca_mounted = false;
  for (const auto& m : rq_pod["containers"][0]["volumeMounts"])
    ca_mounted = ca_mounted || m["mountPath"].as<std::string>() == "/etc/vigil/tls";
  EXPECT_TRUE(ca_mounted);
}

#ifdef VIGIL_DRAINER_BINARY
TEST(Manifests, drainer_configs_pass_the_drainers_own_validation) {
  Scratch s;
  std::ofstream(s.file("token")) << "0123456789abcdef0123456789abcdef\n";
  // What the Secret vigil-drainer-tls holds, made here (test_pki.h).
  const auto& pki = vigil::testing::TestPki::shared();
  fs::create_directories(s.file("tls"));
  fs::copy_file(pki.path("server.pem"), s.file("tls/tls.crt"));
  fs::copy_file(pki.path("server.key"), s.file("tls/tls.key"));
  fs::copy_file(pki.path("ca.pem"), s.file("tls/ca.crt"));
  for (const std::string rel :
       {"config/drainer.yaml", "components/node-conditions/drainer.yaml",
        "components/pod-lookup/drainer.yaml", "components/ingest-tls/drainer.yaml"}) {
    std::string text = read(kCron + "/" + rel);
    const std::string from = "token_file: /etc/vigil/token";
    ASSERT_NE(text.find(from), std::string::npos) << rel;
    text.replace(text.find(from), from.size(), "token_file: " + s.file("token"));
    for (size_t p; (p = text.find("/etc/vigil/tls/")) != std::string::npos;)
      text.replace(p, 15, s.file("tls") + "/");
    std::ofstream(s.file("drainer.yaml")) << text;
    const auto r =
        run_command({VIGIL_DRAINER_BINARY, "config", "validate", s.file("drainer.yaml")});
    EXPECT_EQ(r.exit_code, 0) << rel << "\n" << r.describe();
  }
}
#endif

}  // namespace
