//! Oracle-style statements and statement splitting (being written).
