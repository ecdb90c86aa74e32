//! The deployment files: `deploy/kubernetes` validated against the real
//! Kubernetes API schemas (vendored in tests/fixtures/kubernetes, see its
//! README), strictly (an unknown field fails, as the API server's strict
//! field validation refuses it), and the manifests, the Dockerfile and the
//! gateway's own defaults checked against each other: ports, probe paths,
//! the catalogs path, the user, the shutdown grace, the build command.

use crate::support::*;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn kustomize_dir() -> PathBuf {
    repo().join("deploy/kubernetes")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every document of a YAML file, as JSON. Parsed through serde_yaml_ng's
/// own value first, which refuses duplicate keys (as Kubernetes' strict
/// decoding does) instead of keeping the last.
fn yaml_documents(text: &str, origin: &str) -> Vec<Value> {
    use serde::Deserialize;
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|document| {
            let yaml = serde_yaml_ng::Value::deserialize(document)
                .unwrap_or_else(|e| panic!("{origin}: {e}"));
            serde_json::to_value(yaml).unwrap_or_else(|e| panic!("{origin}: {e}"))
        })
        .filter(|document| !document.is_null())
        .collect()
}

// --- the Kubernetes schemas --------------------------------------------

fn definitions() -> Map<String, Value> {
    let path = repo().join("tests/fixtures/kubernetes/definitions.json");
    let document: Value = serde_json::from_str(&read(&path)).unwrap();
    document["definitions"].as_object().unwrap().clone()
}

/// The definitions as the API server applies them: strict about fields,
/// and with the two types whose JSON form the Swagger document states as
/// a string but Kubernetes also decodes from a number.
fn strict_definitions() -> Map<String, Value> {
    let mut definitions = definitions();
    for (name, schema) in definitions.iter_mut() {
        if name == "io.k8s.apimachinery.pkg.api.resource.Quantity" {
            // `cpu: 2` and `cpu: "2"` are both a quantity.
            schema["type"] = json!(["string", "number"]);
        }
        strictly(schema);
    }
    definitions
}

/// `additionalProperties: false` on every object schema with `properties`
/// that says nothing of other members (Kubernetes' schemas never say it,
/// yet the API server refuses unknown fields), except where unknown fields
/// are kept (`x-kubernetes-preserve-unknown-fields`). `int-or-string`
/// accepts both.
fn strictly(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if object.get("format").and_then(Value::as_str) == Some("int-or-string") {
        object.insert("type".into(), json!(["integer", "string"]));
    }
    let preserves = object
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true);
    if object.contains_key("properties")
        && !object.contains_key("additionalProperties")
        && !preserves
    {
        object.insert("additionalProperties".into(), json!(false));
    }
    for (key, value) in object.iter_mut() {
        match key.as_str() {
            "properties" => {
                if let Some(properties) = value.as_object_mut() {
                    properties.values_mut().for_each(strictly);
                }
            }
            "items" | "additionalProperties" => strictly(value),
            "allOf" | "anyOf" | "oneOf" => {
                if let Some(list) = value.as_array_mut() {
                    list.iter_mut().for_each(strictly);
                }
            }
            _ => {}
        }
    }
}

/// The definition of an object's `apiVersion` and `kind`, by the
/// `x-kubernetes-group-version-kind` extension.
fn definition_for(definitions: &Map<String, Value>, object: &Value) -> Result<String, String> {
    let api_version = object["apiVersion"]
        .as_str()
        .ok_or("no apiVersion".to_string())?;
    let kind = object["kind"].as_str().ok_or("no kind".to_string())?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let wanted = json!({"group": group, "version": version, "kind": kind});
    definitions
        .iter()
        .find(|(_, schema)| {
            schema["x-kubernetes-group-version-kind"]
                .as_array()
                .is_some_and(|kinds| kinds.contains(&wanted))
        })
        .map(|(name, _)| name.clone())
        .ok_or(format!(
            "{api_version} {kind} is not among the vendored definitions \
             (add it to scripts/extract-kubernetes-schemas.py)"
        ))
}

struct KubernetesSchemas {
    definitions: Map<String, Value>,
    validators: std::sync::Mutex<BTreeMap<String, std::sync::Arc<jsonschema::Validator>>>,
}

impl KubernetesSchemas {
    fn load() -> KubernetesSchemas {
        KubernetesSchemas {
            definitions: strict_definitions(),
            validators: Default::default(),
        }
    }

    /// Every way `object` fails its kind's schema (empty when valid).
    fn errors(&self, object: &Value) -> Vec<String> {
        let name = match definition_for(&self.definitions, object) {
            Ok(name) => name,
            Err(why) => return vec![why],
        };
        let validator = self
            .validators
            .lock()
            .unwrap()
            .entry(name.clone())
            .or_insert_with(|| {
                // Swagger 2.0 definitions are JSON Schema draft 4.
                let root = json!({"definitions": self.definitions, "$ref": format!("#/definitions/{name}")});
                std::sync::Arc::new(
                    jsonschema::options()
                        .with_draft(jsonschema::Draft::Draft4)
                        .build(&root)
                        .unwrap_or_else(|e| panic!("{name} does not compile: {e}")),
                )
            })
            .clone();
        let mut errors: Vec<String> = validator
            .iter_errors(object)
            .map(|error| format!("{error} at '{}'", error.instance_path()))
            .collect();
        if object["metadata"]["name"]
            .as_str()
            .is_none_or(str::is_empty)
        {
            errors.push("no metadata.name".into());
        }
        errors
    }
}

// --- the manifests, as kustomize renders them ---------------------------

struct Kustomization {
    resources: Vec<String>,
    objects: Vec<Value>,
}

/// The objects `kubectl apply -k deploy/kubernetes` creates: every
/// resource file's documents and the generated ConfigMap (with the
/// generator options this kustomization uses, and no others).
fn kustomization() -> Kustomization {
    let dir = kustomize_dir();
    let k = &yaml_documents(&read(&dir.join("kustomization.yaml")), "kustomization.yaml")[0];
    let known = [
        "apiVersion",
        "kind",
        "resources",
        "configMapGenerator",
        "generatorOptions",
    ];
    for key in k.as_object().unwrap().keys() {
        assert!(
            known.contains(&key.as_str()),
            "kustomization.yaml: `{key}` changes what kustomize renders; \
             teach tests/it/deploy_manifests.rs what it does"
        );
    }
    assert_eq!(k["apiVersion"], "kustomize.config.k8s.io/v1beta1");
    assert_eq!(k["kind"], "Kustomization");
    let resources: Vec<String> = k["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect();
    let mut objects = Vec::new();
    for resource in &resources {
        objects.extend(yaml_documents(&read(&dir.join(resource)), resource));
    }
    let options = &k["generatorOptions"];
    assert_eq!(
        options["disableNameSuffixHash"], true,
        "a hashed ConfigMap name is renamed in the Deployment by kustomize: teach the test"
    );
    for generator in k["configMapGenerator"].as_array().into_iter().flatten() {
        let mut data = Map::new();
        for file in generator["files"].as_array().unwrap() {
            let file = file.as_str().unwrap();
            let key = Path::new(file).file_name().unwrap().to_str().unwrap();
            data.insert(key.into(), json!(read(&dir.join(file))));
        }
        let mut metadata = json!({"name": generator["name"]});
        if let Some(labels) = options.get("labels") {
            metadata["labels"] = labels.clone();
        }
        objects.push(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata,
            "data": data,
        }));
    }
    Kustomization { resources, objects }
}

fn the<'a>(objects: &'a [Value], kind: &str) -> &'a Value {
    let found: Vec<&Value> = objects.iter().filter(|o| o["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "one {kind} in deploy/kubernetes");
    found[0]
}

#[test]
fn every_manifest_is_valid_against_the_kubernetes_api_schemas() {
    let schemas = KubernetesSchemas::load();
    let Kustomization { resources, objects } = kustomization();
    // Every manifest in the folder is a resource of the kustomization.
    let mut files = BTreeSet::new();
    for entry in std::fs::read_dir(kustomize_dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".yaml") && name != "kustomization.yaml" {
            files.insert(name);
        }
    }
    assert_eq!(
        files,
        resources.iter().cloned().collect(),
        "every manifest is listed in kustomization.yaml's resources"
    );
    let kinds: BTreeSet<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        BTreeSet::from([
            "ConfigMap",
            "Deployment",
            "HorizontalPodAutoscaler",
            "PodDisruptionBudget",
            "Service"
        ])
    );
    let mut failures = Vec::new();
    for object in &objects {
        for error in schemas.errors(object) {
            failures.push(format!(
                "{} {}: {error}",
                object["kind"].as_str().unwrap_or("?"),
                object["metadata"]["name"].as_str().unwrap_or("?")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "invalid against the Kubernetes API:\n  {}",
        failures.join("\n  ")
    );
}

/// The validation refuses what the API server would: each of these
/// edits to the real Deployment (and Service) must fail, and the forms
/// Kubernetes accepts must pass.
#[test]
fn the_schema_check_refuses_what_kubernetes_refuses() {
    let schemas = KubernetesSchemas::load();
    let objects = kustomization().objects;
    let deployment = the(&objects, "Deployment").clone();
    let service = the(&objects, "Service").clone();
    assert!(schemas.errors(&deployment).is_empty());
    let edit = |object: &Value, pointer: &str, change: &dyn Fn(&mut Value)| {
        let mut edited = object.clone();
        change(
            edited
                .pointer_mut(pointer)
                .unwrap_or_else(|| panic!("{pointer}")),
        );
        edited
    };
    let rename = |from: &'static str, to: &'static str| {
        move |v: &mut Value| {
            let map = v.as_object_mut().unwrap();
            let value = map.remove(from).unwrap();
            map.insert(to.into(), value);
        }
    };
    let container = "/spec/template/spec/containers/0";
    let refused = [
        (
            "a misspelt field",
            edit(&deployment, "/spec", &rename("replicas", "replica")),
        ),
        (
            "a misspelt nested field",
            edit(
                &deployment,
                &format!("{container}/readinessProbe/httpGet"),
                &rename("path", "paht"),
            ),
        ),
        (
            "an unknown top-level field",
            edit(&deployment, "", &|v| v["specification"] = json!({})),
        ),
        (
            "a field of another kind",
            edit(&deployment, &format!("{container}/securityContext"), &|v| {
                v["fsGroup"] = json!(1000)
            }),
        ),
        (
            "a string for an integer",
            edit(&deployment, "/spec", &|v| v["replicas"] = json!("3")),
        ),
        (
            "a missing required field",
            edit(&deployment, container, &|v| {
                v.as_object_mut().unwrap().remove("name");
            }),
        ),
        (
            "an object for an int-or-string",
            edit(&service, "/spec/ports/0", &|v| v["targetPort"] = json!({})),
        ),
        (
            "an unknown apiVersion",
            edit(&deployment, "", &|v| {
                v["apiVersion"] = json!("apps/v1beta9")
            }),
        ),
    ];
    for (what, object) in refused {
        assert!(
            !schemas.errors(&object).is_empty(),
            "{what} passed the schema check"
        );
    }
    let accepted = [
        edit(&deployment, "/spec/strategy/rollingUpdate", &|v| {
            v["maxSurge"] = json!("25%")
        }),
        edit(
            &deployment,
            &format!("{container}/resources/limits"),
            &|v| v["cpu"] = json!(2),
        ),
        edit(&service, "/spec/ports/0", &|v| {
            v["targetPort"] = json!(8080)
        }),
        edit(&deployment, "/metadata", &|v| {
            v["annotations"] = json!({"anything": "goes"})
        }),
    ];
    for object in accepted {
        assert_eq!(schemas.errors(&object), Vec::<String>::new());
    }
}

/// What `kubectl kustomize` renders is what the test validates. kubectl
/// is `SEZZLEE_TEST_KUBECTL` (which then must run:
/// `scripts/fetch-kubectl.sh` fetches one), else `kubectl` on `PATH`;
/// without either the check says it skipped.
#[test]
fn kubectl_kustomize_renders_the_objects_validated() {
    const CHECK: &str = "kubectl_kustomize_renders_the_objects_validated";
    let named = std::env::var_os("SEZZLEE_TEST_KUBECTL");
    let kubectl = named.clone().unwrap_or_else(|| "kubectl".into());
    let output = match std::process::Command::new(&kubectl)
        .arg("kustomize")
        .arg(kustomize_dir())
        .output()
    {
        Ok(output) if output.status.success() => output,
        Ok(output) => panic!(
            "kubectl kustomize failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ),
        Err(why) if named.is_some() => panic!("SEZZLEE_TEST_KUBECTL does not run: {why}"),
        Err(_) => {
            crate::corpus::skipped(
                CHECK,
                "no kubectl here to render deploy/kubernetes (scripts/fetch-kubectl.sh, \
                 then SEZZLEE_TEST_KUBECTL)",
            );
            return;
        }
    };
    let rendered = yaml_documents(
        &String::from_utf8(output.stdout).unwrap(),
        "kubectl kustomize",
    );
    let key = |o: &Value| format!("{}/{}", o["kind"], o["metadata"]["name"]);
    let by_key = |objects: &[Value]| -> BTreeMap<String, Value> {
        objects.iter().map(|o| (key(o), o.clone())).collect()
    };
    assert_eq!(by_key(&rendered), by_key(&kustomization().objects));
    let schemas = KubernetesSchemas::load();
    for object in &rendered {
        assert_eq!(
            schemas.errors(object),
            Vec::<String>::new(),
            "{}",
            key(object)
        );
    }
}

// --- the Dockerfile -----------------------------------------------------

/// One Dockerfile instruction: its keyword and the rest, continuation
/// lines joined and comment lines dropped (as Docker reads it).
struct Instruction {
    keyword: String,
    args: String,
}

fn dockerfile() -> Vec<Instruction> {
    let mut instructions = Vec::new();
    let mut current = String::new();
    for line in read(&repo().join("Dockerfile")).lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        if let Some(continued) = trimmed.strip_suffix('\\') {
            current.push_str(continued);
            current.push(' ');
            continue;
        }
        current.push_str(trimmed);
        let (keyword, args) = current.split_once(' ').unwrap_or((&current, ""));
        instructions.push(Instruction {
            keyword: keyword.to_ascii_uppercase(),
            args: args.split_whitespace().collect::<Vec<_>>().join(" "),
        });
        current.clear();
    }
    instructions
}

/// `KEY=value KEY2=value2` (ENV, ARG), unquoted.
fn assignments(args: &str) -> BTreeMap<String, String> {
    args.split_whitespace()
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        .collect()
}

struct Image {
    args: BTreeMap<String, String>,
    builder_from: String,
    builder_runs: Vec<String>,
    final_from: String,
    copies: Vec<String>,
    env: BTreeMap<String, String>,
    user: String,
    expose: Vec<String>,
    healthcheck: String,
    entrypoint: Vec<String>,
    cmd: Vec<String>,
}

fn image() -> Image {
    let instructions = dockerfile();
    let froms: Vec<usize> = (0..instructions.len())
        .filter(|&i| instructions[i].keyword == "FROM")
        .collect();
    assert_eq!(froms.len(), 2, "a builder stage and a final stage");
    let (builder, last) = (&instructions[froms[0]..froms[1]], &instructions[froms[1]..]);
    let one = |keyword: &str| -> String {
        let found: Vec<&Instruction> = last.iter().filter(|i| i.keyword == keyword).collect();
        assert_eq!(found.len(), 1, "one {keyword} in the final stage");
        found[0].args.clone()
    };
    let exec_form = |keyword: &str| -> Vec<String> {
        serde_json::from_str(&one(keyword))
            .unwrap_or_else(|e| panic!("{keyword} in exec (JSON) form: {e}"))
    };
    Image {
        args: instructions[..froms[0]]
            .iter()
            .filter(|i| i.keyword == "ARG")
            .flat_map(|i| assignments(&i.args))
            .collect(),
        builder_from: instructions[froms[0]].args.clone(),
        builder_runs: builder
            .iter()
            .filter(|i| i.keyword == "RUN")
            .map(|i| i.args.clone())
            .collect(),
        final_from: instructions[froms[1]].args.clone(),
        copies: last
            .iter()
            .filter(|i| i.keyword == "COPY")
            .map(|i| i.args.clone())
            .collect(),
        env: last
            .iter()
            .filter(|i| i.keyword == "ENV")
            .flat_map(|i| assignments(&i.args))
            .collect(),
        user: one("USER"),
        expose: one("EXPOSE").split_whitespace().map(String::from).collect(),
        healthcheck: one("HEALTHCHECK"),
        entrypoint: exec_form("ENTRYPOINT"),
        cmd: exec_form("CMD"),
    }
}

const BINARY: &str = "/usr/local/bin/sezzlee";

#[test]
fn the_dockerfile_builds_and_runs_the_gateway_as_the_code_expects() {
    let image = image();
    // The builder: the official Rust image, the release build of the one
    // binary, with the lock file, installed where the final stage takes it.
    let rust = &image.args["RUST_IMAGE"];
    assert!(
        rust.starts_with("docker.io/library/rust:1-") && rust.contains("bookworm"),
        "{rust}"
    );
    assert_eq!(image.builder_from, "${RUST_IMAGE} AS builder");
    let bin = Path::new(env!("CARGO_BIN_EXE_sezzlee"))
        .file_stem()
        .unwrap();
    assert_eq!(bin, "sezzlee", "the workspace's binary is `sezzlee`");
    let build = image
        .builder_runs
        .iter()
        .find(|run| run.contains("cargo build"))
        .expect("a RUN with cargo build");
    assert!(
        build.contains("cargo build --release --locked --bin sezzlee"),
        "{build}"
    );
    assert!(
        build.contains(&format!("target/release/sezzlee {BINARY}")),
        "{build}"
    );
    // The final stage: distroless/cc of the same Debian, non-root.
    assert_eq!(image.final_from, "${RUNTIME_IMAGE}");
    let runtime = &image.args["RUNTIME_IMAGE"];
    assert!(
        runtime.starts_with("gcr.io/distroless/cc-debian12") && runtime.ends_with(":nonroot"),
        "{runtime}"
    );
    assert!(
        image
            .copies
            .contains(&format!("--from=builder {BINARY} {BINARY}")),
        "{:?}",
        image.copies
    );
    let (uid, gid) = image.user.split_once(':').expect("USER uid:gid");
    let uid: u32 = uid.parse().expect("a numeric uid (runAsNonRoot checks it)");
    let _: u32 = gid.parse().expect("a numeric gid");
    assert_ne!(uid, 0);
    assert_eq!(image.entrypoint, [BINARY]);
    assert_eq!(image.cmd, ["serve"]);
    // The HEALTHCHECK runs the binary's own probe.
    let (options, command) = image
        .healthcheck
        .split_once(" CMD ")
        .expect("HEALTHCHECK … CMD");
    assert!(options.contains("--start-period="), "{options}");
    let command: Vec<String> = serde_json::from_str(command).expect("CMD in exec form");
    assert_eq!(command, [BINARY, "health"]);
    // Served on every interface at the exposed port; the catalogs at the
    // documented path, where the demo catalog is copied.
    let listen = &image.env["SEZZLEE_LISTEN"];
    let port = listen.rsplit_once(':').unwrap().1;
    assert!(listen.starts_with("0.0.0.0:"), "{listen}");
    assert_eq!(image.expose, [port.to_string()]);
    assert_eq!(image.env["SEZZLEE_CATALOGS"], CATALOGS);
    assert!(
        image.copies.contains(&format!("catalogs/ {CATALOGS}/")),
        "{:?}",
        image.copies
    );
    for name in image.env.keys().filter(|n| n.starts_with("SEZZLEE_")) {
        assert!(settings_variables().contains(name), "{name} is no setting");
    }
    // The build context holds what the build needs and not the rest.
    let ignored: BTreeSet<String> = read(&repo().join(".dockerignore"))
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect();
    for needed in [
        "Cargo.toml",
        "Cargo.lock",
        "src",
        "crates",
        "benches",
        "catalogs",
    ] {
        assert!(
            !ignored.iter().any(|pattern| pattern == needed
                || pattern == &format!("{needed}/")
                || pattern == &format!("/{needed}")),
            "{needed} is left out of the build context"
        );
    }
    for left_out in [".git", "**/target"] {
        assert!(ignored.contains(left_out), ".dockerignore lacks {left_out}");
    }
}

const CATALOGS: &str = "/etc/sezzlee/catalogs";

/// The `SEZZLEE_*` variables the binary reads (clap's `env = "…"`).
fn settings_variables() -> BTreeSet<String> {
    let main = read(&repo().join("src/main.rs"));
    let mut names: BTreeSet<String> = main
        .split("env = \"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(String::from)
        .collect();
    // Read by the settings beside the flags (README: "Identity and visibility").
    let settings = read(&repo().join("crates/gateway/src/settings.rs"));
    names.extend(
        settings
            .split("get(\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .map(String::from),
    );
    assert!(names.contains("SEZZLEE_LISTEN") && names.contains("SEZZLEE_CATALOGS"));
    names
}

// --- manifests, image and gateway together -------------------------------

fn env_of(container: &Value) -> BTreeMap<String, String> {
    container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["value"].as_str().expect("a literal value").to_string(),
            )
        })
        .collect()
}

/// A probe's or target's port: a number, or a container port's name.
fn port_number(container: &Value, port: &Value) -> u64 {
    match port {
        Value::Number(n) => n.as_u64().unwrap(),
        Value::String(name) => container["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == *name)
            .unwrap_or_else(|| panic!("no container port named {name}"))["containerPort"]
            .as_u64()
            .unwrap(),
        other => panic!("a port: {other}"),
    }
}

fn selects(selector: &Value, labels: &Value) -> bool {
    let match_labels = selector.get("matchLabels").unwrap_or(selector);
    !match_labels.as_object().unwrap().is_empty()
        && match_labels
            .as_object()
            .unwrap()
            .iter()
            .all(|(k, v)| labels[k] == *v)
}

#[tokio::test]
#[ignore = "slow campaign: `cargo test -- --include-ignored` runs it, as CI does"]
async fn manifests_image_and_gateway_agree() {
    let objects = kustomization().objects;
    let image = image();
    let deployment = the(&objects, "Deployment");
    let spec = &deployment["spec"];
    let pod = &spec["template"]["spec"];
    let pod_labels = &spec["template"]["metadata"]["labels"];
    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let container = &containers[0];

    // Rolling update one pod at a time, never below the replica count.
    assert_eq!(spec["replicas"], 3);
    assert_eq!(spec["strategy"]["type"], "RollingUpdate");
    assert_eq!(spec["strategy"]["rollingUpdate"]["maxUnavailable"], 0);
    assert_eq!(spec["strategy"]["rollingUpdate"]["maxSurge"], 1);
    assert!(selects(&spec["selector"], pod_labels));

    // Listening where the image does, on the declared container port.
    let env = env_of(container);
    for name in env.keys().filter(|n| n.starts_with("SEZZLEE_")) {
        assert!(settings_variables().contains(name), "{name} is no setting");
    }
    let listen = env
        .get("SEZZLEE_LISTEN")
        .unwrap_or(&image.env["SEZZLEE_LISTEN"]);
    let port: u64 = listen.rsplit_once(':').unwrap().1.parse().unwrap();
    assert_eq!(image.expose, [port.to_string()]);
    assert_eq!(port_number(container, &json!("http")), port);
    if let Some(args) = container.get("args") {
        assert_eq!(args, &json!(image.cmd));
    }
    assert!(
        container.get("command").is_none(),
        "the image's entrypoint runs"
    );

    // Probes: ready on /readyz, alive on /healthz, on the gateway's port.
    for (probe, path) in [
        ("readinessProbe", "/readyz"),
        ("livenessProbe", "/healthz"),
        ("startupProbe", "/healthz"),
    ] {
        let get = &container[probe]["httpGet"];
        assert_eq!(get["path"], path, "{probe}");
        assert_eq!(port_number(container, &get["port"]), port, "{probe}");
    }
    let startup = &container["startupProbe"];
    let patience =
        startup["periodSeconds"].as_u64().unwrap() * startup["failureThreshold"].as_u64().unwrap();
    assert!(
        patience >= 120,
        "a directory-scale catalog loads in about 30 s on 2 cores: {patience} s"
    );

    // The kubelet kills only after the gateway's drain and shutdown grace
    // are over; the drain outlasts the spread of the endpoint removal.
    let defaults = sezzlee_gateway::settings::Settings::default();
    let env_ms = |name: &str| {
        container["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|var| var["name"] == name)
            .map(|var| Duration::from_millis(var["value"].as_str().unwrap().parse().unwrap()))
    };
    let drain = env_ms("SEZZLEE_SHUTDOWN_DRAIN_MS").unwrap_or(defaults.shutdown_drain);
    let grace = env_ms("SEZZLEE_SHUTDOWN_GRACE_MS").unwrap_or(defaults.shutdown_grace);
    assert!(
        drain >= Duration::from_secs(3),
        "a drain of {drain:?} is shorter than endpoint removal takes to spread"
    );
    let termination = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
    assert!(
        Duration::from_secs(termination) > drain + grace + Duration::from_secs(5),
        "terminationGracePeriodSeconds {termination} within drain {drain:?} + grace {grace:?}"
    );

    // Non-root (the image's user), read-only root, no privileges.
    let pod_security = &pod["securityContext"];
    let security = &container["securityContext"];
    let either = |field: &str| security.get(field).or(pod_security.get(field)).cloned();
    assert_eq!(either("runAsNonRoot"), Some(json!(true)));
    let (uid, gid) = image.user.split_once(':').unwrap();
    assert_eq!(
        either("runAsUser"),
        Some(json!(uid.parse::<u64>().unwrap()))
    );
    assert_eq!(
        either("runAsGroup"),
        Some(json!(gid.parse::<u64>().unwrap()))
    );
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(
        either("seccompProfile"),
        Some(json!({"type": "RuntimeDefault"}))
    );
    assert_eq!(pod["enableServiceLinks"], false);

    // Resources: requested (the autoscaler's utilisation needs the CPU
    // request), memory limited.
    let resources = &container["resources"];
    for (what, field) in [
        ("requests", "cpu"),
        ("requests", "memory"),
        ("limits", "memory"),
    ] {
        assert!(
            resources[what][field].is_string(),
            "resources.{what}.{field}"
        );
    }

    // The catalogs: the generated ConfigMap, read-only at the image's path.
    let catalogs = env
        .get("SEZZLEE_CATALOGS")
        .unwrap_or(&image.env["SEZZLEE_CATALOGS"]);
    assert_eq!(catalogs, &image.env["SEZZLEE_CATALOGS"]);
    let mount = container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["mountPath"] == *catalogs)
        .expect("a volume mounted at SEZZLEE_CATALOGS");
    assert_eq!(mount["readOnly"], true);
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .unwrap();
    let config_map = the(&objects, "ConfigMap");
    assert_eq!(volume["configMap"]["name"], config_map["metadata"]["name"]);
    assert!(
        volume["configMap"].get("items").is_none(),
        "every key mounted"
    );
    assert!(
        mount.get("subPath").is_none(),
        "a subPath mount never updates"
    );
    // The ConfigMap holds the repository's demo catalog, byte for byte.
    let data = config_map["data"].as_object().unwrap();
    let shipped: BTreeSet<String> = std::fs::read_dir(shipped_catalogs())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(data.keys().cloned().collect::<BTreeSet<_>>(), shipped);
    for (name, text) in data {
        assert_eq!(
            text.as_str().unwrap(),
            read(&shipped_catalogs().join(name)),
            "deploy/kubernetes/catalogs/{name} differs from catalogs/{name}"
        );
    }

    // The Service, the disruption budget and the autoscaler all mean
    // these pods.
    let service = the(&objects, "Service");
    assert_eq!(service["spec"]["type"], "ClusterIP");
    assert!(selects(&service["spec"]["selector"], pod_labels));
    let service_port = &service["spec"]["ports"][0];
    assert_eq!(service_port["port"], 80);
    assert_eq!(port_number(container, &service_port["targetPort"]), port);
    let pdb = the(&objects, "PodDisruptionBudget");
    assert!(selects(&pdb["spec"]["selector"], pod_labels));
    let replicas = spec["replicas"].as_i64().unwrap();
    let kept = match (&pdb["spec"]["minAvailable"], &pdb["spec"]["maxUnavailable"]) {
        (Value::Number(min), Value::Null) => min.as_i64().unwrap(),
        (Value::Null, Value::Number(max)) => replicas - max.as_i64().unwrap(),
        other => panic!("minAvailable or maxUnavailable as a number: {other:?}"),
    };
    assert!(
        (2..replicas).contains(&kept),
        "a drain may take one replica and keeps two: {kept} of {replicas}"
    );
    let hpa = the(&objects, "HorizontalPodAutoscaler");
    let target = &hpa["spec"]["scaleTargetRef"];
    assert_eq!(target["apiVersion"], deployment["apiVersion"]);
    assert_eq!(target["kind"], "Deployment");
    assert_eq!(target["name"], deployment["metadata"]["name"]);
    assert_eq!(hpa["spec"]["minReplicas"], spec["replicas"]);
    assert_eq!(hpa["spec"]["metrics"][0]["resource"]["name"], "cpu");
    assert_eq!(
        hpa["spec"]["metrics"][0]["resource"]["target"]["type"],
        "Utilization"
    );

    // The real binary, started with the container's settings (on a
    // loopback port and the ConfigMap's files): the probes answer 200,
    // and the image's HEALTHCHECK command passes against it.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let local = free.local_addr().unwrap();
    drop(free);
    let folder = tempfile::tempdir().unwrap();
    for (name, text) in data {
        std::fs::write(folder.path().join(name), text.as_str().unwrap()).unwrap();
    }
    let mut serve = sezzlee_binary(None);
    serve.args(image.cmd.iter());
    for (name, value) in image.env.iter().chain(env.iter()) {
        serve.env(name, value);
    }
    serve
        .env("SEZZLEE_LISTEN", local.to_string())
        .env("SEZZLEE_CATALOGS", folder.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = serve.spawn().unwrap();
    let client = reqwest::Client::new();
    let base = format!("http://{local}");
    let mut up = false;
    for _ in 0..200 {
        if client
            .get(format!("{base}/healthz"))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200)
        {
            up = true;
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).ok();
            panic!("sezzlee serve with the Deployment's settings exited {status}: {stderr}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(up, "the gateway came up with the Deployment's settings");
    for probe in ["readinessProbe", "livenessProbe", "startupProbe"] {
        let path = container[probe]["httpGet"]["path"].as_str().unwrap();
        let status = client
            .get(format!("{base}{path}"))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 200, "{probe} {path}");
    }
    let health = tokio::task::spawn_blocking(move || {
        let mut command = sezzlee_binary(None);
        command
            .args(&command_args(&image.healthcheck)[1..])
            // The image's listen address, on the port this gateway has.
            .env("SEZZLEE_LISTEN", format!("0.0.0.0:{}", local.port()))
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(health.status.success(), "HEALTHCHECK: {health:?}");
    let stopped = terminate(&mut child);
    assert!(
        stopped.success(),
        "SIGTERM ends the gateway with 0: {stopped}"
    );
}

fn command_args(healthcheck: &str) -> Vec<String> {
    serde_json::from_str(healthcheck.split_once(" CMD ").unwrap().1).unwrap()
}

/// Stops the gateway this test started (SIGTERM, by its own pid, as the
/// kubelet does), killing it if it has not exited within 15 s.
fn terminate(child: &mut std::process::Child) -> std::process::ExitStatus {
    let _ = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while std::time::Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    child.wait().unwrap()
}
