//! The `checkpoint_image` target: the bytes of a checkpoint image file, decoded by the
//! database layer (`db::checkpoint::decode_image`).
//!
//! Input: the image without its last four bytes; the harness appends the crc32c of the
//! input, so mutations reach the decoder instead of stopping at the checksum.
//!
//! Invariants checked when an image decodes: every row fits its table (one value per
//! column, of the column's type, NOT NULL honoured, no text over its length, filed under
//! its own key), and encoding the state and decoding it again gives the same bytes.

use std::path::Path;

use db::checkpoint::{decode_image, encode_image};
use db::state::DbState;

/// The database id the harness decodes images as.
pub const DB_ID: u64 = crate::redo_files::DB_ID;

/// An image file's bytes: the input and its checksum.
pub fn with_checksum(data: &[u8]) -> Vec<u8> {
    let mut bytes = data.to_vec();
    bytes.extend_from_slice(&crc32c::crc32c(data).to_le_bytes());
    bytes
}

/// The path the harness says its images were read from (only error messages show it).
const PATH: &str = "image-fuzz.img";

pub fn run(data: &[u8]) {
    let bytes = with_checksum(data);
    let Ok((state, info)) = decode_image(&bytes, Path::new(PATH), DB_ID) else { return };
    assert_eq!(info.bytes, bytes.len() as u64, "the image's size is its bytes'");
    assert_eq!((info.scn, info.lsn), (state.scn, state.lsn), "the image's SCN and position are its state's");
    check_rows(&state);
    let first = encode(&state);
    let (again, _) =
        decode_image(&first, Path::new(PATH), DB_ID).expect("an image this build wrote reads back");
    assert!(encode(&again) == first, "an image read back encodes as it was written");
}

fn encode(state: &DbState) -> Vec<u8> {
    let mut out = Vec::new();
    encode_image(&mut out, DB_ID, state).expect("an image encoded into memory");
    out
}

/// Every row of every table fits its table.
pub fn check_rows(state: &DbState) {
    for schema in state.schemas() {
        let table = state.table(&schema.name).expect("a table of the state");
        for (key, row) in table.rows.iter() {
            assert_eq!(
                row.len(),
                schema.columns.len(),
                "a row of \"{}\" has one value per column",
                schema.name
            );
            for (value, column) in row.iter().zip(&schema.columns) {
                if value.is_null() {
                    assert!(column.nullable, "NULL in NOT NULL column {}", column.name);
                    continue;
                }
                assert!(
                    value.has_type(column.ty),
                    "{value:?} in column {} of type {:?}",
                    column.name,
                    column.ty
                );
                if let (db::Value::Text(text), db::DataType::Text { max_chars: Some(max) }) =
                    (value, column.ty)
                {
                    assert!(
                        text.chars().count() <= max as usize,
                        "a text over the length of {}",
                        column.name
                    );
                }
            }
            assert!(*key == schema.key_of(row), "a row filed under another key than its own");
        }
    }
}
