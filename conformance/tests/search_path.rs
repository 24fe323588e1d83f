//! Plugin resolution by name along the search path, discovery, and several plugins in one
//! process. One test in its own binary: it sets environment variables.

use std::path::{Path, PathBuf};

use bellows_conformance::plugin_build::{build_plugins, profile_dir};
use bellows_core::{
    backend::NttConfig,
    layout::Fr,
    plugin::{discover, find_plugin, loader, search_dirs},
    registry::resolve,
    BackendConfig, Error,
};
use bellows_cpu as _;

fn fresh_dir(name: &str) -> PathBuf {
    let d = profile_dir()
        .unwrap()
        .join("bellows-plugin-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn copy(from: &Path, dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(loader::plugin_file_name(name));
    std::fs::copy(from, &to).unwrap();
    to
}

#[test]
fn names_resolve_along_the_search_path_and_discovery_reports_failures() {
    let plugins = build_plugins().unwrap();
    let first = fresh_dir("first");
    let second = fresh_dir("second");
    let user = fresh_dir("user");
    let a = copy(&plugins.cpu, &first, "alpha");
    copy(&plugins.test_plugin("not_a_plugin"), &first, "broken");
    copy(&plugins.test_plugin("future_version"), &second, "future");
    let b = copy(&plugins.cpu, &second, "alpha"); // shadowed by the first directory
    let u = copy(&plugins.cpu, &user, "gamma");
    std::env::set_var(
        loader::PLUGIN_PATH_ENV,
        format!("{}:{}", first.display(), second.display()),
    );
    std::env::set_var(loader::USER_LIB_DIR_ENV, &user);

    let dirs = search_dirs();
    assert_eq!(dirs[0], first);
    assert_eq!(dirs[1], second);
    assert_eq!(dirs.last().unwrap(), &user);
    let exe_dir = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    assert!(
        dirs.contains(&exe_dir),
        "the executable's folder is searched: {dirs:?}"
    );

    // By name: the first directory wins; the user folder is searched last.
    assert_eq!(find_plugin("alpha"), Some(a.clone()));
    assert_eq!(find_plugin("gamma"), Some(u.clone()));
    assert_eq!(
        find_plugin("../alpha"),
        None,
        "names cannot walk out of the search path"
    );
    let alpha = resolve("alpha", &BackendConfig::default()).unwrap();
    assert_eq!(alpha.info().name, "cpu");
    // A built-in name resolves to the built-in backend even with a plugin of that name around.
    copy(&plugins.cpu, &first, "cpu");
    let cpu = resolve("cpu", &BackendConfig::default()).unwrap();
    assert!(cpu.info().description.to_lowercase().contains("cpu") || cpu.info().name == "cpu");

    // Several plugins in one process, each its own library: three copies of the CPU plugin and the
    // built-in backend compute the same NTT.
    let by_path = |p: &Path| resolve(p.to_str().unwrap(), &BackendConfig::default()).unwrap();
    let backends = [
        alpha,
        by_path(&b),
        resolve("gamma", &BackendConfig::default()).unwrap(),
        cpu,
    ];
    let x: Vec<Fr> = (1..=16u64)
        .map(|i| blstrs::Scalar::from(i).into())
        .collect();
    let outs: Vec<Vec<Fr>> = backends
        .iter()
        .map(|be| {
            let mut d = x.clone();
            be.ntt(&mut d, 4, &NttConfig::forward().with_coset(true))
                .unwrap();
            d
        })
        .collect();
    assert!(outs.windows(2).all(|w| w[0] == w[1]));
    assert_ne!(outs[0], x);

    // An unknown name says where it looked.
    let e = match resolve("nothing-here", &BackendConfig::default()) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("resolved a missing plugin"),
    };
    assert!(
        e.contains(&first.display().to_string()) && e.contains("libbellows_backend_nothing-here"),
        "{e}"
    );

    // Discovery: every candidate file with its info or its error.
    let found = discover();
    let get = |name: &str, dir: &Path| {
        found
            .iter()
            .find(|d| d.name == name && d.path.parent() == Some(dir))
            .unwrap_or_else(|| panic!("{name} in {} not discovered: {found:?}", dir.display()))
    };
    assert_eq!(get("alpha", &first).result.as_ref().unwrap().name, "cpu");
    assert_eq!(get("alpha", &second).result.as_ref().unwrap().name, "cpu");
    assert_eq!(get("gamma", &user).result.as_ref().unwrap().name, "cpu");
    match &get("broken", &first).result {
        Err(Error::Plugin { path, reason }) => {
            assert_eq!(path, &first.join(loader::plugin_file_name("broken")));
            assert!(reason.starts_with("not a Bellows plugin"), "{reason}");
        }
        r => panic!("{r:?}"),
    }
    match &get("future", &second).result {
        Err(Error::Plugin { reason, .. }) => assert!(
            reason.contains(bellows_core::plugin::INTERFACE_VERSION),
            "{reason}"
        ),
        r => panic!("{r:?}"),
    }
    let alpha_first = found.iter().position(|d| d.path == a).unwrap();
    let alpha_second = found.iter().position(|d| d.path == b).unwrap();
    assert!(
        alpha_first < alpha_second,
        "discovery lists files in search order"
    );
}
