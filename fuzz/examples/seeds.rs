//! Writes the seed corpus (`redodb_fuzz::seeds`) into `fuzz/seeds/<target>/`, replacing
//! what is there, and checks that the redo seeds recover what they were made to hold.
//! Run from `fuzz/`: `cargo run --example seeds`.

use std::fs;
use std::path::Path;

fn main() -> std::io::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds");
    let seeds = redodb_fuzz::seeds::all();
    let mut targets: Vec<&str> = seeds.iter().map(|s| s.target).collect();
    targets.dedup();
    for target in targets {
        let dir = root.join(target);
        if dir.exists() {
            fs::remove_dir_all(&dir)?;
        }
        fs::create_dir_all(&dir)?;
    }
    for seed in &seeds {
        fs::write(root.join(seed.target).join(&seed.name), &seed.bytes)?;
    }
    for seed in seeds.iter().filter(|s| s.target == "redo_log") {
        let recovered = redodb_fuzz::redo_files::recovered_transactions(&seed.bytes);
        println!("redo_log/{}: {:?} commits recovered", seed.name, recovered.map(|t| t.len()));
    }
    println!("{} seeds written under {}", seeds.len(), root.display());
    Ok(())
}
