#!/usr/bin/env bash
# Jaeger v1's all-in-one (collector, in-memory storage and query API in one process), into bin/jaeger-all-in-one
# (or $1): the real OTLP receiver of test/tracing.test.ts and the demo's traces (harness/jaeger.ts). `go install
# …/cmd/all-in-one@v1.76.0` refuses it (Jaeger's go.mod has a replace directive), so: the module from the Go module
# proxy, copied, and `go build` inside it, as scripts/build-mailpit.sh does. Its web UI is not in the Go module (it
# is another project's JavaScript, built apart), so this Jaeger serves a placeholder page: the API is what we read.
# Measured on this 2-core machine under other work (load 7–15): 308 s user + 102 s system CPU (8 min wall), 653 MB
# of modules, a 49 MiB binary, from a cold cache; the same again after the Temporal CLI's build (its dependencies are
# other versions, so the CLI's cache saves nothing).
set -euo pipefail
version=v1.76.0
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out=${1:-$root/bin/jaeger-all-in-one}
mkdir -p "$(dirname "$out")"
out="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

module=$(cd "$work" && go mod download -json "github.com/jaegertracing/jaeger@$version" |
  node -e 'let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => console.log(JSON.parse(s).Dir))')
cp -r "$module/." "$work/src"
chmod -R u+w "$work/src"
cd "$work/src"
CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -gcflags=all=-dwarf=false -ldflags "-s -w" -o "$out" ./cmd/all-in-one
echo "$out: Jaeger all-in-one $version (no web UI: its API only)"
