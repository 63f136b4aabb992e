#!/usr/bin/env bash
# Mailpit with its web UI, into bin/mailpit (or $1). `go install` makes a Mailpit whose web UI is a blank
# page: the UI's bundle is built by esbuild from server/ui-src and is not in the Go module. So: the module
# (the Go module proxy), its UI bundled with the npm packages its lock names, then `go build`. Two changes
# this machine's npm registry needs: sass-embedded pinned to 1.105.0 (the lock's is not served), and
# rapidoc left out (not served; it only draws the API docs page, /api/v1/). The tests need only the API,
# the demo's email is seen in the UI: when the UI cannot be bundled, Mailpit is still built, without it
# (the demo then says so). Run by scripts/setup.sh when no Mailpit is found.
set -euo pipefail
version=v1.33.1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out=${1:-$root/bin/mailpit}
mkdir -p "$(dirname "$out")"
out="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

module=$(cd "$work" && go mod download -json "github.com/axllent/mailpit@$version" |
  node -e 'let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => console.log(JSON.parse(s).Dir))')
cp -r "$module/." "$work/src"
chmod -R u+w "$work/src"
cd "$work/src"

bundle_ui() {
  node -e '
  const fs = require("node:fs");
  const pkg = JSON.parse(fs.readFileSync("package.json", "utf8"));
  delete pkg.dependencies.rapidoc;
  const build = ["esbuild", "esbuild-plugin-vue-next", "esbuild-sass-plugin", "@vue/compiler-sfc"];
  pkg.devDependencies = Object.fromEntries(build.map((name) => [name, pkg.devDependencies[name]]));
  pkg.devDependencies["sass-embedded"] = "1.105.0";
  fs.writeFileSync("package.json", JSON.stringify(pkg, null, 2));
  const config = fs.readFileSync("esbuild.config.mjs", "utf8");
  const app = config.replace(/entryPoints: \[[^\]]*\]/, "entryPoints: [\"server/ui-src/app.js\"]");
  if (app === config) throw new Error("esbuild.config.mjs: entryPoints not found");
  fs.writeFileSync("esbuild.config.mjs", app);
  ' &&
    npm install --no-audit --no-fund --ignore-scripts --loglevel=error &&
    MINIFY=true node esbuild.config.mjs &&
    test -s server/ui/dist/app.js
}
ui="with its web UI"
if ! bundle_ui; then
  rm -rf server/ui/dist
  ui="WITHOUT its web UI (the bundle failed, above): its API works, its UI is a blank page"
  echo "warning: building Mailpit $ui" >&2
fi
CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -gcflags=all=-dwarf=false -ldflags "-s -w -X github.com/axllent/mailpit/config.Version=$version" -o "$out" .
echo "$out: Mailpit $version $ui"
