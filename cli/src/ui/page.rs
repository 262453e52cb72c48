//! The page: `web/dashboard/` (its shell, controller, lanes model and views) with the
//! playground's own modules it is built from (`web/app/view/dom.js`, the language and the words
//! of `web/app/model/`), compiled into the binary so `leasefence ui` needs no files beside it.

/// One file of the page: its path under the server's root and its text.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static str,
}

const JS: &str = "text/javascript; charset=utf-8";

const ASSETS: [Asset; 13] = [
    Asset {
        path: "/dashboard/main.js",
        content_type: JS,
        body: include_str!("../../../web/dashboard/main.js"),
    },
    Asset {
        path: "/dashboard/style.css",
        content_type: "text/css; charset=utf-8",
        body: include_str!("../../../web/dashboard/style.css"),
    },
    Asset {
        path: "/dashboard/model/lanes.js",
        content_type: JS,
        body: include_str!("../../../web/dashboard/model/lanes.js"),
    },
    Asset {
        path: "/dashboard/view/counts-view.js",
        content_type: JS,
        body: include_str!("../../../web/dashboard/view/counts-view.js"),
    },
    Asset {
        path: "/dashboard/view/jobs-view.js",
        content_type: JS,
        body: include_str!("../../../web/dashboard/view/jobs-view.js"),
    },
    Asset {
        path: "/dashboard/view/lanes-view.js",
        content_type: JS,
        body: include_str!("../../../web/dashboard/view/lanes-view.js"),
    },
    Asset {
        path: "/dashboard/view/registry-view.js",
        content_type: JS,
        body: include_str!("../../../web/dashboard/view/registry-view.js"),
    },
    Asset {
        path: "/app/view/dom.js",
        content_type: JS,
        body: include_str!("../../../web/app/view/dom.js"),
    },
    Asset {
        path: "/app/model/i18n.js",
        content_type: JS,
        body: include_str!("../../../web/app/model/i18n.js"),
    },
    Asset {
        path: "/app/model/messages/en.js",
        content_type: JS,
        body: include_str!("../../../web/app/model/messages/en.js"),
    },
    Asset {
        path: "/app/model/messages/ja.js",
        content_type: JS,
        body: include_str!("../../../web/app/model/messages/ja.js"),
    },
    Asset {
        path: "/app/model/messages/zh.js",
        content_type: JS,
        body: include_str!("../../../web/app/model/messages/zh.js"),
    },
    Asset {
        path: "/favicon.svg",
        content_type: "image/svg+xml",
        body: include_str!("../../../web/app/icon.svg"),
    },
];

/// The page's shell; `read_only` leaves the revive buttons out.
pub(crate) fn index(read_only: bool) -> String {
    include_str!("../../../web/dashboard/index.html")
        .replace("__READ_ONLY__", if read_only { "true" } else { "false" })
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
        for asset in &super::ASSETS {
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
