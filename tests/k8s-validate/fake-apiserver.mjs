// A read-only stand-in for kube-apiserver, so that `kubectl create job --from=cronjob/NAME
// --dry-run=client -o yaml` runs offline against the CronJob of the built kustomization:
// discovery for core/v1 and batch/v1 and GET of the CronJobs in the given file; anything else 404.
//   node fake-apiserver.mjs BUILT.yaml   -> prints "listening on 127.0.0.1:PORT", serves until killed
// Every request is logged to stderr, so a test can see what kubectl asked for.
import fs from "node:fs";
import http from "node:http";
import yaml from "js-yaml";

const objects = yaml.loadAll(fs.readFileSync(process.argv[2], "utf8")).filter((d) => d != null);
const cronJobs = new Map();
for (const o of objects) {
  if (o.kind === "CronJob") {
    cronJobs.set(`${o.metadata.namespace ?? "default"}/${o.metadata.name}`, {
      ...o,
      metadata: { ...o.metadata, uid: "00000000-0000-0000-0000-00000000c0de", resourceVersion: "1" },
    });
  }
}

const resource = (name, kind, namespaced, verbs) => ({ name, singularName: "", namespaced, kind, verbs });
const routes = {
  "/api": { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [] },
  "/apis": {
    kind: "APIGroupList", apiVersion: "v1",
    groups: [{ name: "batch", versions: [{ groupVersion: "batch/v1", version: "v1" }],
               preferredVersion: { groupVersion: "batch/v1", version: "v1" } }],
  },
  "/api/v1": { kind: "APIResourceList", groupVersion: "v1", resources: [] },
  "/apis/batch/v1": {
    kind: "APIResourceList", apiVersion: "v1", groupVersion: "batch/v1",
    resources: [resource("cronjobs", "CronJob", true, ["get", "list"]),
                resource("jobs", "Job", true, ["get", "list", "create"])],
  },
};

const server = http.createServer((req, res) => {
  const path = req.url.split("?")[0];
  process.stderr.write(`${req.method} ${req.url}\n`);
  let body = routes[path];
  const m = path.match(/^\/apis\/batch\/v1\/namespaces\/([^/]+)\/cronjobs\/([^/]+)$/);
  if (m) body = cronJobs.get(`${m[1]}/${m[2]}`);
  if (req.method !== "GET" || body === undefined) {
    res.writeHead(404, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", reason: "NotFound", code: 404 }));
    return;
  }
  res.writeHead(200, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
});
server.listen(0, "127.0.0.1", () => {
  console.log(`listening on 127.0.0.1:${server.address().port}`);
});
const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
