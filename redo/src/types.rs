//! Domain numbers of the redo log, each a newtype so that a byte position can never be
//! passed where a commit number is expected.
//!
//! - [`Lsn`]: log sequence number, the byte position in the redo stream (block headers
//!   included). Monotonic for the life of a database.
//! - [`Scn`]: system commit number. Dense (every value from 1 up is used by exactly one
//!   commit) and ordered like the commits' positions in the stream.
//! - [`TxnId`]: names a transaction's records in the stream; unique across restarts.
//! - [`LogSeq`]: the sequence number of one use of a log group (a "log file sequence").

use std::fmt;

macro_rules! newtype_u64 {
    ($(#[$meta:meta])* $name:ident, $prefix:literal) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u64);

        impl $name {
            pub const ZERO: $name = $name(0);
            pub fn get(self) -> u64 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

newtype_u64!(
    /// Byte position in the redo stream.
    Lsn,
    "lsn:"
);
newtype_u64!(
    /// System commit number: dense, one per commit, in commit order.
    Scn,
    "scn:"
);
newtype_u64!(
    /// Transaction identifier carried by every record of a transaction.
    TxnId,
    "txn:"
);
newtype_u64!(
    /// Sequence number of one use of a log group; the first use is 1.
    LogSeq,
    "seq:"
);

impl Scn {
    pub fn next(self) -> Scn {
        Scn(self.0 + 1)
    }
}
