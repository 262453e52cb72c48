#!/usr/bin/env bash
# Packages the crate and the CLI as crates.io would get them, and builds the packaged copies
# (cargo package verifies by building each from its .crate file, away from the workspace).
# The CLI embeds the dashboard's page, which lives in web/ beside the playground modules it
# shares: this copies the page's folders into cli/dashboard-assets/ first (ignored by git,
# packaged through Cargo.toml's `include`), where cli/build.rs finds them in a packaged crate.
# cli/build.rs follows the page's imports, so a file missing from the copy fails the build.
set -euo pipefail
cd "$(dirname "$0")/.."
assets=cli/dashboard-assets
rm -rf "$assets"
mkdir -p "$assets/app/view" "$assets/app/model"
cp -R web/dashboard "$assets/dashboard"
rm -f "$assets/dashboard/README.md"
cp web/app/view/dom.js "$assets/app/view/"
cp -R web/app/model/i18n.js web/app/model/messages "$assets/app/model/"
cp web/app/icon.svg "$assets/app/"
# --allow-dirty: a local run may have uncommitted edits; CI's clone is clean either way.
cargo package --quiet --allow-dirty -p leasefence -p leasefence-cli "$@"
