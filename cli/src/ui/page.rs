//! The page: `web/dashboard/` (its shell, controller, lanes model and views) with the pieces it
//! shares with the playground (`web/common/`: `dom.js`, the language and the words), compiled
//! into the binary so `leasefence ui` needs no files beside it.
//! Which files those are, build.rs finds by following the modules' imports.

/// One file of the page: its path under the server's root and its text.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static str,
}

// `INDEX` and `ASSETS`: the files `main.js` and `style.css` import, found by build.rs.
include!(concat!(env!("OUT_DIR"), "/dashboard_assets.rs"));

/// The page's shell; `read_only` leaves the revive buttons out.
pub(crate) fn index(read_only: bool) -> String {
    INDEX.replace("__READ_ONLY__", if read_only { "true" } else { "false" })
}

/// A file of the page by its path: (content type, text).
pub(crate) fn asset(path: &str) -> Option<(&'static str, &'static str)> {
    ASSETS
        .iter()
        .find(|a| a.path == path)
        .map(|a| (a.content_type, a.body))
}

#[cfg(test)]
mod tests {
    /// Every module a served module imports is served too (a missing one would leave the page
    /// blank in a browser, with no error from the server).
    #[test]
    fn every_import_of_a_served_module_is_served() {
        for asset in super::ASSETS {
            for line in asset.body.lines() {
                let Some(from) = line.split(" from '").nth(1) else {
                    continue;
                };
                let relative = from.trim_end_matches("';");
                let base = &asset.path[..asset.path.rfind('/').unwrap()];
                let mut parts: Vec<&str> = base.split('/').collect();
                for piece in relative.split('/') {
                    match piece {
                        "." => {}
                        ".." => {
                            parts.pop();
                        }
                        other => parts.push(other),
                    }
                }
                let target = parts.join("/");
                assert!(
                    super::asset(&target).is_some(),
                    "{} imports {target}, which is not served",
                    asset.path
                );
            }
        }
    }
}
