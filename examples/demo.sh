#!/usr/bin/env bash
# Builds cascade, copies the bundled example into a temporary git repository,
# changes one file and runs `cascade plan` on it: what it prints is exactly the
# comment the bot would post on the pull request. Needs cargo, git, terraform.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"

# What it needs, each missing one named with where to get it, before minutes of building.
missing=()
command -v cargo >/dev/null ||
    missing+=("cargo: install a Rust toolchain (1.95 or later) from https://rustup.rs")
command -v git >/dev/null ||
    missing+=("git: on Debian or Ubuntu, sudo apt-get install git; elsewhere your package manager's git")
# Debian and Ubuntu do not package terraform.
command -v terraform >/dev/null ||
    missing+=("terraform: install it from https://developer.hashicorp.com/terraform/install (a single binary to put on PATH; HashiCorp's apt repository is there too)")
if [ ${#missing[@]} -gt 0 ]; then
    echo "examples/demo.sh needs these on PATH:" >&2
    for m in "${missing[@]}"; do echo "  - $m" >&2; done
    exit 1
fi

export CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
cargo build --release --quiet --manifest-path "$here/Cargo.toml"
work="$(mktemp -d)"
cp -r "$here/examples/live" "$work/live"
cd "$work/live"
git init -q
git add -A
git -c user.name=demo -c user.email=demo@example.com -c commit.gpgsign=false commit -qm "bundled example"
printf '\n# a change under review\n' >> dev/network/main.tf
"$here/target/release/cascade" plan --changed dev/network/main.tf
echo
echo "The example is in $work/live. To apply the plan above there:"
echo "  cd $work/live && $here/target/release/cascade apply <plan id>"
