//! `redodb`: the command-line tool. For now it runs the redo engine benchmark.

fn main() {
    println!("redodb {}", env!("CARGO_PKG_VERSION"));
}
