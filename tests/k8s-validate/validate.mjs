// Validates Kubernetes objects against the upstream OpenAPI schemas with kubernetes-models.
//   node validate.mjs FILE.yaml...   every document; one line per object; exit 1 on any error
//   node validate.mjs --self-test    proves the validator rejects broken objects (exit 1 if not)
// Unknown kinds are errors (nothing passes unvalidated). Note: the schemas do not forbid
// unknown fields (additionalProperties), so a misspelt optional field is not caught here.
import fs from "node:fs";
import yaml from "js-yaml";

// apiVersion "apps/v1" -> module "kubernetes-models/apps/v1"; core "v1" -> "kubernetes-models/v1".
async function modelFor(apiVersion, kind) {
  if (typeof apiVersion !== "string" || typeof kind !== "string") {
    throw new Error("object without apiVersion/kind");
  }
  let mod;
  try {
    mod = await import(`kubernetes-models/${apiVersion}`);
  } catch (e) {
    throw new Error(`no schema for apiVersion ${apiVersion}`);
  }
  if (typeof mod[kind] !== "function") throw new Error(`no schema for ${apiVersion} ${kind}`);
  return mod[kind];
}

export async function validateObject(obj) {
  const Model = await modelFor(obj.apiVersion, obj.kind);
  new Model(obj).validate();  // throws with the JSON path of the first violation
}

function describe(obj) {
  const ns = obj?.metadata?.namespace ? `${obj.metadata.namespace}/` : "";
  return `${obj?.apiVersion} ${obj?.kind} ${ns}${obj?.metadata?.name}`;
}

async function validateFiles(files) {
  let errors = 0;
  let count = 0;
  for (const file of files) {
    const docs = yaml.loadAll(fs.readFileSync(file, "utf8")).filter((d) => d != null);
    for (const obj of docs) {
      count++;
      try {
        await validateObject(obj);
        console.log(`ok ${describe(obj)}`);
      } catch (e) {
        errors++;
        console.log(`INVALID ${describe(obj)}: ${e.message}`);
      }
    }
  }
  console.log(`${count} objects, ${errors} invalid`);
  return errors === 0 && count > 0;
}

const podSpec = (containers) => ({ template: { spec: { containers, restartPolicy: "Never" } } });
const cronJob = (schedule, containers) => ({
  apiVersion: "batch/v1",
  kind: "CronJob",
  metadata: { name: "t" },
  spec: { schedule, jobTemplate: { spec: podSpec(containers) } },
});

async function selfTest() {
  const cases = [
    ["valid CronJob", cronJob("0 * * * *", [{ name: "c", image: "i" }]), null],
    ["missing container name", cronJob("0 * * * *", [{ image: "i" }]), /must have required property 'name'|required property name/],
    ["non-string schedule", cronJob(5, [{ name: "c", image: "i" }]), /schedule must be string/],
    ["Deployment without selector",
     { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "d" },
       spec: { template: { spec: { containers: [{ name: "c" }] } } } }, /selector/],
    ["ClusterRole rule verbs not a list",
     { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "r" },
       rules: [{ apiGroups: [""], resources: ["nodes"], verbs: "get" }] }, /verbs must be array/],
    ["unknown kind", { apiVersion: "v1", kind: "NoSuchKind", metadata: { name: "x" } }, /no schema/],
  ];
  let failures = 0;
  for (const [name, obj, expected] of cases) {
    let error = null;
    try {
      await validateObject(obj);
    } catch (e) {
      error = e.message;
    }
    const pass = expected === null ? error === null : error !== null && expected.test(error);
    if (!pass) failures++;
    console.log(`${pass ? "ok" : "FAILED"} ${name}: ${error === null ? "accepted" : "rejected: " + error}`);
  }
  return failures === 0;
}

const args = process.argv.slice(2);
const ok = args[0] === "--self-test" ? await selfTest() : await validateFiles(args);
process.exit(ok ? 0 : 1);
