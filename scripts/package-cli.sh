#!/usr/bin/env bash
# Packages the crate and the CLI as crates.io would get them, and builds the packaged copies
# (cargo package verifies by building each from its .crate file, away from the workspace).
# The CLI embeds the dashboard's page, which lives in web/ beside the pieces it shares with the
# playground (web/common/): this copies the page's folders into cli/dashboard-assets/ first (ignored by git,
# packaged through Cargo.toml's `include`), where cli/build.rs finds them in a packaged crate.
# cli/build.rs follows the page's imports, so a file missing from the copy fails the build.
set -euo pipefail
cd "$(dirname "$0")/.."
assets=cli/dashboard-assets
rm -rf "$assets"
mkdir -p "$assets/app"
cp -R web/dashboard "$assets/dashboard"
rm -f "$assets/dashboard/README.md"
cp -R web/common "$assets/common"
cp web/app/icon.svg "$assets/app/"
# cargo package verifies the CLI against the just-packaged library through a local registry in
# target/package, and unpacks it under CARGO_HOME's registry/src keyed by that registry's path and
# the crate's version, never again once there: a second checkout at the same path (a CI clone made
# again) would build the CLI against the library as an earlier run packaged it. Remove those
# unpacked copies of our own crates first (no published crate of these names is a dependency).
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/leasefence-[0-9]* "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/leasefence-cli-[0-9]*
# --allow-dirty: a local run may have uncommitted edits; CI's clone is clean either way.
cargo package --quiet --allow-dirty -p leasefence -p leasefence-cli "$@"
