//! The encoder's speed on one core and on all, by hand:
//! `cargo run --release -p sezzlee-semantic --example encoder_speed -- MODEL_DIR`.
//! Prints the cosine of a reference pair (all-MiniLM-L6-v2 gives 0.7553),
//! a nine-word query's p50/p99 on one thread and with its products split
//! over two (what a served query does), and tool texts per second at 32, 64
//! and 128 tokens, one text at a time and on rayon's threads.

use std::time::Instant;

use rayon::prelude::*;
use sezzlee_semantic::TextModel;

fn main() {
    let Some(folder) = std::env::args().nth(1) else {
        eprintln!("usage: encoder_speed MODEL_DIR");
        std::process::exit(2);
    };
    let model = match TextModel::load(std::path::Path::new(&folder)) {
        Ok(model) => model,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let pair = ["A man is eating food.", "A man is eating a piece of bread."];
    let (a, b) = (model.embed(pair[0]), model.embed(pair[1]));
    if let (Some(a), Some(b)) = (a, b) {
        let cosine: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        println!("reference pair cosine {cosine:.4}");
    }
    let query = "text this customer that the parcel is late";
    for (how, split) in [("one thread", false), ("split", true)] {
        let mut times: Vec<f64> = (0..60)
            .map(|_| {
                let started = Instant::now();
                let _ = if split {
                    model.embed_waited_for(query)
                } else {
                    model.embed(query)
                };
                started.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        println!(
            "query ({how}) p50 {:.2} ms p99 {:.2} ms",
            times[30], times[59]
        );
    }
    let words: Vec<String> = (0..200).map(|i| format!("word{}", i % 37)).collect();
    for tokens in [32usize, 64, 128] {
        // Each "wordN" is about three word pieces.
        let text = words[..tokens / 3].join(" ");
        let texts: Vec<String> = (0..64).map(|i| format!("{i} {text}")).collect();
        let started = Instant::now();
        for t in &texts[..16] {
            let _ = model.embed(t);
        }
        let one = 16.0 / started.elapsed().as_secs_f64();
        let started = Instant::now();
        let _: Vec<_> = texts.par_iter().map(|t| model.embed(t)).collect();
        let all = 64.0 / started.elapsed().as_secs_f64();
        println!(
            "~{tokens} tokens: {one:.1} texts/s on one core, {all:.1} on {} threads",
            rayon::current_num_threads()
        );
    }
}
