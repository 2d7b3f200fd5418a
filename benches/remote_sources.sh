#!/usr/bin/env bash
# Discovery of a 50-stack tree whose units come from a remote catalog, against the same
# tree with the catalog's units in the repository (issue 23). Prints the median of each:
# local sources, remote sources with a cold cache (every run fetches into an empty cache),
# remote sources with a warm cache, and the two ratios.
#
#   benches/remote_sources.sh [path/to/cascade] [runs]
#
# The catalog is a local git repository fetched over file:// with the user's git (as the
# CLI fetches); a network's latency would add to the cold figure only.
set -euo pipefail
bin=$(realpath "${1:-target/release/cascade}")
runs=${2:-7}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
g() { git -c user.name=b -c user.email=b@example.com -c init.defaultBranch=main "$@"; }

# The catalog: the live-stacks example's three units.
cat=$work/catalog
mkdir -p "$cat/units/db" "$cat/units/role" "$cat/units/service"
echo 'inputs = { name = values.name }' > "$cat/units/db/terragrunt.hcl"
printf 'dependency "db" {\n  config_path = values.db_path\n}\ninputs = { name = values.name }\n' > "$cat/units/role/terragrunt.hcl"
printf 'dependency "db" {\n  config_path = values.db_path\n}\ndependency "role" {\n  config_path = values.role_path\n}\ninputs = { name = values.name }\n' > "$cat/units/service/terragrunt.hcl"
(cd "$cat" && g init -q && g add -A && g commit -qm catalog && g tag v1)

# Two live trees of 50 stacks: sources in the catalog, and the same units in the tree.
stack() { # $1 = source prefix
    for u in db role service; do
        printf 'unit "%s" {\n  source = "%s//units/%s?ref=v1"\n  path   = "%s"\n  values = { name = "%s", db_path = "../db", role_path = "../role" }\n}\n' \
            "$u" "$1" "$u" "$u" "$u"
    done
}
remote=$work/remote
localtree=$work/local
for i in $(seq -w 1 50); do
    mkdir -p "$remote/env$i/app" "$localtree/env$i/app"
    stack "git::file://$cat" > "$remote/env$i/app/terragrunt.stack.hcl"
    stack "../../catalog" | sed "s|//units/|/units/|; s|?ref=v1||" > "$localtree/env$i/app/terragrunt.stack.hcl"
done
# The same units in the tree (discovered as three more units of their own, as Terragrunt would).
mkdir -p "$localtree/catalog" && cp -r "$cat/units" "$localtree/catalog/units"
for t in "$remote" "$localtree"; do (cd "$t" && g init -q && g add -A && g commit -qm live); done

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms() { # run the command, print wall milliseconds
    local start end
    start=$(date +%s%N); "$@" > /dev/null || [ $? = 1 ]; end=$(date +%s%N)
    echo $(( (end - start) / 1000000 ))
}
check() { # $1 tree, $2 cache, $3 the units and edges it must give
    local units
    # Exit 1 is a graph with problems (the local tree's catalog units lack their values).
    (cd "$1" && XDG_CACHE_HOME="$2" "$bin" graph --format json > "$work/graph.json") || [ $? = 1 ]
    units=$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(1 for u in d["units"] if u["kind"] != "stack"), sum(len(u["dependencies"]) for u in d["units"]))' < "$work/graph.json")
    [ "$units" = "$3" ] || { echo "unexpected graph in $1: $units (units, edges), wanted $3"; exit 1; }
}
check "$localtree" "$work/cache-check-local" "153 150"
check "$remote" "$work/cache-check-remote" "150 150"

declare -a L C W
for r in $(seq 1 "$runs"); do
    L+=("$(cd "$localtree" && XDG_CACHE_HOME=$work/none ms "$bin" graph --format json)")
    rm -rf "$work/cold"
    C+=("$(cd "$remote" && XDG_CACHE_HOME=$work/cold ms "$bin" graph --format json)")
    W+=("$(cd "$remote" && XDG_CACHE_HOME=$work/warm ms "$bin" graph --format json)")
done
l=$(printf '%s\n' "${L[@]}" | median)
c=$(printf '%s\n' "${C[@]}" | median)
w=$(printf '%s\n' "${W[@]}" | median)
echo "50 stacks, 150 units, median of $runs: local ${l} ms, remote cold ${c} ms, remote warm ${w} ms"
awk -v l="$l" -v c="$c" -v w="$w" 'BEGIN { printf "cold/local %.2f  warm/local %.2f\n", c / l, w / l }'
