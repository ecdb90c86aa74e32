//! Semantic search end to end: a model folder in the settings, the
//! gateway embedding its tools in the background (and caching them on
//! disk, so a second start embeds nothing), search_tools fusing meaning
//! with keywords, reloads reusing the vectors of unchanged tools, and
//! models that cannot be used refused with the file at fault named.
//!
//! The model here is synthetic (a word-level tokenizer and a table of
//! four-dimensional vectors written by the test), so what each query means
//! is known exactly; the real model's quality is measured by
//! `real_model_ranks_sentences_better_and_keeps_keyword_floors`, which runs
//! when `SEZZLEE_TEST_SEARCH_MODEL` names a folder fetched by
//! `scripts/fetch-search-model.sh` (CI fetches it) and says it skipped
//! otherwise.

use crate::support::{TestGateway, names};
use serde_json::{Value, json};
use sezzlee_catalog::Sources;
use sezzlee_semantic::{ModelError, TextModel, ToolVectors};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

/// Concept axes of the synthetic model: money back, customers, removal,
/// messages.
const WORDS: &[(&str, [f32; 4])] = &[
    ("refund", [1.0, 0.0, 0.0, 0.0]),
    ("refunds", [1.0, 0.0, 0.0, 0.0]),
    ("money", [0.9, 0.0, 0.0, 0.1]),
    ("back", [0.8, 0.0, 0.1, 0.0]),
    ("post", [0.1, 0.1, 0.1, 0.1]),
    ("customer", [0.0, 1.0, 0.0, 0.0]),
    ("customers", [0.0, 1.0, 0.0, 0.0]),
    ("delete", [0.0, 0.0, 1.0, 0.0]),
    ("remove", [0.0, 0.0, 1.0, 0.05]),
    ("list", [0.1, 0.1, 0.1, 0.1]),
    ("charges", [0.5, 0.3, 0.0, 0.0]),
    ("send", [0.0, 0.0, 0.0, 1.0]),
    ("message", [0.0, 0.0, 0.0, 1.0]),
    ("messages", [0.0, 0.0, 0.0, 1.0]),
    ("text", [0.0, 0.1, 0.0, 0.9]),
];

/// Writes the synthetic model into `folder`: `tokenizer.json` (lowercase,
/// split on words, unknown words to `[UNK]`, whose vector is zero) and
/// `embeddings.safetensors` (one F32 tensor, a row per token id).
fn write_model(folder: &Path, words: &[(&str, [f32; 4])]) {
    let mut vocab = serde_json::Map::new();
    vocab.insert("[UNK]".into(), json!(0));
    for (id, (word, _)) in words.iter().enumerate() {
        vocab.insert((*word).into(), json!(id + 1));
    }
    let tokenizer = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": null,
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
    });
    std::fs::write(folder.join("tokenizer.json"), tokenizer.to_string()).unwrap();
    let mut rows: Vec<f32> = vec![0.0; 4];
    for (_, vector) in words {
        rows.extend_from_slice(vector);
    }
    write_tensor(
        &folder.join("embeddings.safetensors"),
        &[("embedding.weight", "F32", vec![words.len() + 1, 4], &rows)],
    );
    write_sums(folder, &["tokenizer.json", "embeddings.safetensors"]);
}

/// `SHA256SUMS` for `files` as they are now, as the fetch script writes it.
fn write_sums(folder: &Path, files: &[&str]) {
    let mut sums = String::new();
    for file in files {
        let bytes = std::fs::read(folder.join(file)).unwrap();
        let digest: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        sums.push_str(&format!("{digest}  {file}\n"));
    }
    std::fs::write(folder.join("SHA256SUMS"), sums).unwrap();
}

/// Waits until every tool of the served snapshot has its vector (the
/// gateway embeds in the background; it serves by keywords meanwhile).
async fn embedded(gateway: &TestGateway) {
    for _ in 0..400 {
        let served = gateway.gateway.store.current();
        let vectors = served
            .per_tool
            .vectors
            .as_ref()
            .expect("a search model")
            .load_full();
        if vectors.embedded() == vectors.len() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the tools were not embedded within 20 s");
}

/// A safetensors file of `tensors` (name, dtype, shape, values as f32).
fn write_tensor(path: &Path, tensors: &[(&str, &str, Vec<usize>, &[f32])]) {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (name, dtype, shape, values) in tensors {
        let start = data.len();
        for value in *values {
            data.extend_from_slice(&value.to_le_bytes());
        }
        header.insert(
            (*name).into(),
            json!({"dtype": dtype, "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    let header = Value::Object(header).to_string();
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&data);
    std::fs::write(path, bytes).unwrap();
}

/// A small API whose operations the synthetic words describe.
fn document(message_summary: &str) -> String {
    let operation = |id: &str, summary: &str| json!({"operationId": id, "summary": summary, "responses": {"200": {"description": "ok"}}});
    json!({
        "openapi": "3.0.3",
        "info": {"title": "Shop", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9/"}],
        "paths": {
            "/refunds": {"post": operation("postRefunds", "Refund")},
            "/customers/{id}": {"delete": operation("deleteCustomer", "Delete customer")},
            "/charges": {"get": operation("listCharges", "List charges")},
            "/messages": {"post": operation("sendMessage", message_summary)}
        }
    })
    .to_string()
}

fn model_folder() -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    write_model(folder.path(), WORDS);
    folder
}

/// Keywords alone cannot place "money back" (no tool has those words) and
/// list tools by name; with the model, the refund comes first, and a
/// sentence about texting finds the message tool. A two-word keyword query
/// ranks exactly as keyword search does.
#[tokio::test]
async fn meaning_finds_what_keywords_miss() {
    let model = model_folder();
    let files = [("shop.json", document("Send message"))];
    let plain = TestGateway::with_files(&files, |_| {}).await;
    let folder = model.path().to_path_buf();
    let semantic = TestGateway::with_files(&files, |s| {
        s.search_model = Some(folder);
        s.vector_cache = None;
    })
    .await;
    embedded(&semantic).await;

    let money = json!({"query": "Could you give them their money back please?"});
    assert_eq!(
        names(&plain.search(money.clone()).await)[0],
        "delete_customer"
    );
    assert_eq!(names(&semantic.search(money).await)[0], "post_refunds");

    let texting = json!({"query": "text my colleague that the meeting moved to noon"});
    assert_eq!(names(&semantic.search(texting).await)[0], "send_message");

    let status = semantic.status().await;
    assert_eq!(status["searchModel"]["tools"], 4, "{status}");
    assert_eq!(status["searchModel"]["dimensions"], 4, "{status}");
    assert_eq!(
        status["searchModel"]["sha256"].as_str().map(str::len),
        Some(64)
    );
    assert_eq!(plain.status().await["searchModel"], Value::Null);
    // Each file by the digest scripts/fetch-search-model.sh pins for it.
    for file in ["tokenizer.json", "embeddings.safetensors"] {
        let bytes = std::fs::read(model.path().join(file)).unwrap();
        let digest: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(status["searchModel"]["files"][file], digest, "{status}");
    }

    let keywords = json!({"query": "list charges"});
    assert_eq!(
        names(&semantic.search(keywords.clone()).await),
        names(&plain.search(keywords).await)
    );
}

/// After an edit, the rebuilt vectors (unchanged tools' rows taken from
/// the previous snapshot) equal vectors computed from scratch, and the
/// edited tool ranks by its new text.
#[tokio::test]
async fn reloads_reuse_unchanged_vectors_and_embed_edited_tools() {
    let model = model_folder();
    let folder = model.path().to_path_buf();
    let gateway = TestGateway::with_files(&[("shop.json", document("Send message"))], |s| {
        s.search_model = Some(folder);
        s.vector_cache = None;
    })
    .await;
    embedded(&gateway).await;
    let money = json!({"query": "Could you give them their money back please?"});
    let before = names(&gateway.search(money.clone()).await);
    assert_eq!(before[..2], ["post_refunds", "list_charges"], "{before:?}");

    let dir = gateway.gateway.settings.catalogs.clone();
    let sources = Sources::scan(&dir, None).unwrap();
    let reloader = sezzlee_gateway::reload::Reloader::new(gateway.gateway.clone(), sources);
    // The message tool's summary now speaks of money back.
    let summary = "refund money back refund money back refund";
    std::fs::write(dir.join("shop.json"), document(summary)).unwrap();
    reloader.rescan().await;
    embedded(&gateway).await;

    let served = gateway.gateway.store.current();
    assert_eq!(served.generation, 1);
    let reused = served
        .per_tool
        .vectors
        .as_ref()
        .expect("vectors")
        .load_full();
    let embedder = gateway.gateway.embedder.clone().expect("a model");
    let fresh = ToolVectors::build(&embedder.model, &served.catalog, None, None);
    assert!(*reused == fresh, "reused rows differ from a fresh build");
    // Four tools at start, the edited one after: nothing embedded twice.
    assert_eq!(embedder.progress.embedded.load(Ordering::Relaxed), 5);
    let after = names(&gateway.search(money).await);
    let mut top = after[..2].to_vec();
    top.sort();
    assert_eq!(top, ["post_refunds", "send_message"], "{after:?}");
}

/// Waits until the gateway's vector cache holds `count` vectors.
async fn cached(gateway: &TestGateway, count: usize) {
    let embedder = gateway.gateway.embedder.clone().expect("a search model");
    let cache = embedder.cache.as_ref().expect("a vector cache");
    for _ in 0..400 {
        if cache.len() >= count {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the cache holds {} vectors, not {count}", cache.len());
}

/// A second start on the same vector cache embeds nothing: every vector
/// comes from the disk (counted). A segment damaged on disk (cut short,
/// as by a crash mid-write or a full volume) is detected, never served,
/// and its texts are embedded again.
#[tokio::test]
async fn vectors_are_embedded_once_across_restarts_and_damage_is_rebuilt() {
    let model = model_folder();
    let cache = tempfile::tempdir().unwrap();
    let files = [("shop.json", document("Send message"))];
    let start = |cache: PathBuf| {
        let folder = model.path().to_path_buf();
        TestGateway::with_files(&files, move |s| {
            s.search_model = Some(folder);
            s.vector_cache = Some(cache);
        })
    };
    let first = start(cache.path().to_path_buf()).await;
    embedded(&first).await;
    cached(&first, 4).await;
    let progress = |g: &TestGateway| {
        let embedder = g.gateway.embedder.clone().expect("a model");
        (
            embedder.progress.embedded.load(Ordering::Relaxed),
            embedder.progress.from_cache.load(Ordering::Relaxed),
        )
    };
    assert_eq!(progress(&first), (4, 0));
    let money = json!({"query": "Could you give them their money back please?"});
    let ranked = names(&first.search(money.clone()).await);

    let second = start(cache.path().to_path_buf()).await;
    embedded(&second).await;
    assert_eq!(
        progress(&second),
        (0, 4),
        "the second start embedded texts again"
    );
    assert_eq!(names(&second.search(money.clone()).await), ranked);
    let status = second.status().await;
    assert_eq!(status["searchModel"]["embedded"], 4, "{status}");
    assert_eq!(status["searchModel"]["pending"], 0, "{status}");
    assert_eq!(status["searchModel"]["cache"]["vectors"], 4, "{status}");

    // Cut every segment short: the third start reads none of it.
    let embedder = second.gateway.embedder.clone().expect("a model");
    let folder = embedder
        .cache
        .as_ref()
        .expect("a cache")
        .folder()
        .to_path_buf();
    for entry in std::fs::read_dir(&folder).unwrap() {
        let path = entry.unwrap().path();
        let length = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(length / 2)
            .unwrap();
    }
    let third = start(cache.path().to_path_buf()).await;
    embedded(&third).await;
    assert_eq!(progress(&third), (4, 0), "a damaged segment was served");
    assert_eq!(names(&third.search(money).await), ranked);
    cached(&third, 4).await;
}

/// Every way a model folder can be wrong is refused at start, naming the
/// file and the reason; the gateway does not start with keyword search in
/// its place.
#[test]
fn unusable_models_are_refused_with_the_file_named() {
    let folder = tempfile::tempdir().unwrap();
    let load = |path: &Path| TextModel::load(path).map(|_| ()).unwrap_err();
    let check = |error: ModelError, file: &str, reason: &str| {
        assert!(error.path.ends_with(file), "{error}");
        assert!(error.reason.contains(reason), "{error}");
    };
    check(
        load(folder.path()),
        "SHA256SUMS",
        "scripts/fetch-search-model.sh",
    );

    // A listed file missing, or not the file its digest pins.
    write_model(folder.path(), WORDS);
    std::fs::remove_file(folder.path().join("tokenizer.json")).unwrap();
    check(load(folder.path()), "tokenizer.json", "No such file");
    write_model(folder.path(), WORDS);
    std::fs::write(folder.path().join("embeddings.safetensors"), b"swapped").unwrap();
    check(
        load(folder.path()),
        "embeddings.safetensors",
        "SHA256SUMS pins",
    );

    // Files that match their digests but are not a model.
    let both = ["tokenizer.json", "embeddings.safetensors"];
    write_model(folder.path(), WORDS);
    std::fs::write(folder.path().join("tokenizer.json"), "{\"model\": 1}").unwrap();
    write_sums(folder.path(), &both);
    check(load(folder.path()), "tokenizer.json", "not a tokenizer");

    write_model(folder.path(), WORDS);
    let tensor = folder.path().join("embeddings.safetensors");
    let rewrite = |tensors: &[(&str, &str, Vec<usize>, &[f32])]| {
        write_tensor(&tensor, tensors);
        write_sums(folder.path(), &both);
    };
    std::fs::write(&tensor, b"not a tensor").unwrap();
    write_sums(folder.path(), &both);
    check(
        load(folder.path()),
        "embeddings.safetensors",
        "not safetensors",
    );
    let row = [0.5f32; 4];
    rewrite(&[
        ("a", "F32", vec![1, 4], &row),
        ("b", "F32", vec![1, 4], &row),
    ]);
    check(
        load(folder.path()),
        "embeddings.safetensors",
        "holds 2 tensors",
    );
    rewrite(&[("a", "F32", vec![4], &row)]);
    check(load(folder.path()), "embeddings.safetensors", "2-D");
    rewrite(&[("a", "F32", vec![1, 4], &[0.5, f32::NAN, 0.5, 0.5])]);
    check(load(folder.path()), "embeddings.safetensors", "finite");
    rewrite(&[("a", "I32", vec![1, 4], &row)]);
    check(
        load(folder.path()),
        "embeddings.safetensors",
        "expected F32, F16 or BF16",
    );

    let mut settings = crate::support::test_settings(&crate::support::shipped_catalogs());
    settings.search_model = Some(folder.path().to_path_buf());
    let refused = sezzlee_gateway::gateway::Gateway::load(settings)
        .map(|_| ())
        .unwrap_err();
    assert!(
        refused.to_string().contains("embeddings.safetensors"),
        "{refused}"
    );
}

/// `SEZZLEE_TEST_SEARCH_MODEL`: the real model's folder, when fetched.
fn real_model() -> Option<PathBuf> {
    let folder = std::env::var_os("SEZZLEE_TEST_SEARCH_MODEL").filter(|v| !v.is_empty())?;
    Some(PathBuf::from(folder))
}

/// With the real model, over the vendored corpus: the encoder computes
/// what sentence-transformers computes (a reference pair's cosine), the
/// held-out sentence tasks (`tests/data/agent-tasks-vendored.tsv`) reach
/// their recall@5 floors and rank better than keywords alone, and the
/// keyword-style tasks keep theirs.
#[test]
fn real_model_ranks_sentences_better_and_keeps_keyword_floors() {
    let Some(folder) = real_model() else {
        crate::corpus::skipped(
            "real_model_ranks_sentences_better_and_keeps_keyword_floors",
            "SEZZLEE_TEST_SEARCH_MODEL is not set (scripts/fetch-search-model.sh)",
        );
        return;
    };
    let model = TextModel::load(&folder).expect("the real model loads");
    assert_eq!(model.kind_name(), "encoder");
    let pair = ["A man is eating food.", "A man is eating a piece of bread."];
    let (a, b) = (model.embed(pair[0]).unwrap(), model.embed(pair[1]).unwrap());
    let cosine: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    // sentence-transformers gives 0.7553 for this pair.
    assert!((cosine - 0.7553).abs() < 0.002, "cosine {cosine}");

    let dir = &crate::corpus::vendored().dir;
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let sample = crate::corpus::vendored().require("search-tasks.tsv");
    let recall = |file: &Path, model: Option<&Path>| {
        let output = crate::check_cli::search_tasks_with_model(dir, file, model);
        let sections = crate::check_cli::recall_at_5_sections(&output);
        assert_eq!(sections.len(), 2, "{sections:?}");
        sections
    };
    let sentences = data.join("agent-tasks-vendored.tsv");
    let before = recall(&sentences, None);
    let after = recall(&sentences, Some(&folder));
    eprintln!(
        "agent-tasks-vendored.tsv recall@5 (merged, alone): keywords {before:?}, with the model {after:?}"
    );
    for ((keywords, fused), floor) in before.iter().zip(&after).zip(SENTENCE_FLOORS) {
        assert!(fused > keywords, "recall@5 {before:?} → {after:?}");
        assert!(
            *fused >= floor,
            "recall@5 {after:?} under its floors {SENTENCE_FLOORS:?}"
        );
    }
    for (tasks, floor) in [(sample, 0.95), (data.join("search-tasks-more.tsv"), 0.8)] {
        for at5 in recall(&tasks, Some(&folder)) {
            assert!(
                at5 >= floor,
                "recall@5 {at5} < {floor} on {}",
                tasks.display()
            );
        }
    }
}

/// Recall@5 floors of the held-out vendored sentences with the real model
/// (all documents merged, each alone): a little under what was measured
/// when the floors were set (`tests/data/README.md`).
const SENTENCE_FLOORS: [f64; 2] = [0.4, 0.55];
