//! Errors of the database layer, each with the SQLSTATE a PostgreSQL client expects, so
//! the wire server maps them in one line.

use std::path::PathBuf;
use std::sync::Arc;

use redo::RedoError;

// A temporary table's (or its index's) stored name is shown as its user wrote it.
use crate::temp_tables::visible_name;

#[derive(Debug, Clone, thiserror::Error)]
pub enum DbError {
    #[error("syntax error at or near position {position}: {message}")]
    Syntax { message: String, position: usize },
    /// An error at a place in the statement's text, PostgreSQL's error position (what
    /// psql underlines): a name that does not resolve. See `DbError::at`. A caller that
    /// matches on the error's variant matches `DbError::kind()`.
    #[error("{error}")]
    At { error: Box<DbError>, at: TextPosition },
    #[error("relation \"{}\" does not exist", crate::temp_tables::written_name(.0))]
    UnknownTable(String),
    #[error("relation \"{}\" already exists", visible_name(.0))]
    TableExists(String),
    #[error("column \"{0}\" does not exist")]
    UnknownColumn(String),
    /// `q.c` where `q` is in the FROM clause and has no column `c` (PostgreSQL's words).
    #[error("column {qualifier}.{column} does not exist")]
    UnknownQualifiedColumn { qualifier: String, column: String },
    /// `q.c` where no relation of the FROM clause answers to `q` (42P01).
    #[error("missing FROM-clause entry for table \"{0}\"")]
    MissingFromEntry(String),
    /// `q.c` where `q` is a FROM item this part of the query cannot see: a subquery in
    /// FROM without LATERAL naming an item before it (42P01, PostgreSQL's words and HINT).
    #[error("invalid reference to FROM-clause entry for table \"{table}\"")]
    InvalidFromReference { table: String, hint: String },
    /// An unqualified column only a FROM item this part of the query cannot see has
    /// (42703, with PostgreSQL's HINT naming the item).
    #[error("column \"{column}\" does not exist")]
    UnreachableColumn { column: String, hint: String },
    /// A LATERAL item reading the left side of the RIGHT or FULL join it is the right
    /// side of (42P10): that join must see every row of its right side, which a lateral
    /// item does not have apart from a left row.
    #[error("invalid reference to FROM-clause entry for table \"{0}\"")]
    LateralAcrossOuterJoin(String),
    #[error("duplicate key value violates unique constraint \"{}\": key ({values}) already exists", visible_name(.index))]
    DuplicateValue { index: String, values: String },
    #[error("there is no unique or exclusion constraint matching the ON CONFLICT specification")]
    NoConflictTarget,
    #[error("index \"{}\" does not exist", visible_name(.0))]
    UnknownIndex(String),
    #[error("column reference \"{0}\" is ambiguous")]
    AmbiguousColumn(String),
    #[error("table name \"{0}\" specified more than once")]
    DuplicateAlias(String),
    #[error("more than one row returned by a subquery used as an expression")]
    CardinalityViolation,
    /// MERGE meeting one target row for a second source row (21000).
    #[error("MERGE command cannot affect row a second time")]
    MergeRowTwice,
    /// A primary key taken: `constraint` is the key's name (`TableSchema::primary_key_name`).
    #[error("duplicate key value violates unique constraint \"{}\": key ({key}) already exists", visible_name(.constraint))]
    DuplicateKey { constraint: String, key: String },
    #[error("null value in column \"{column}\" of relation \"{}\" violates not-null constraint", visible_name(.table))]
    NotNull { table: String, column: String },
    #[error("invalid input for type {expected}: {value}")]
    TypeMismatch { expected: String, value: String },
    #[error("value too long for type {ty}: {len} characters")]
    ValueTooLong { ty: String, len: usize },
    #[error("division by zero")]
    DivisionByZero,
    #[error("{0}")]
    Grouping(String),
    #[error("{0} out of range")]
    NumericOutOfRange(String),
    /// A NUMERIC beyond its column's precision or the type's limits (22003); the message
    /// says which.
    #[error("{0}")]
    NumericOverflow(String),
    /// Text that is no JSON value (22P02).
    #[error("invalid input syntax for type {ty}: {detail}")]
    InvalidJson { ty: String, detail: String },
    /// A character the type cannot hold (`\u0000` in a jsonb): 22P05.
    #[error("{0}")]
    UntranslatableCharacter(String),
    /// An argument or a type's modifier out of what it takes (`NUMERIC(0)`, an odd
    /// number of hex digits for a bytea): PostgreSQL's 22023, invalid_parameter_value.
    #[error("{0}")]
    InvalidArgument(String),
    /// Text that is no date, time, timestamp or interval (PostgreSQL's 22007); the
    /// message names the type and the text.
    #[error("{0}")]
    InvalidDatetime(String),
    /// A date or time outside its type's range, or a field out of range (22008).
    #[error("{0}")]
    DatetimeOverflow(String),
    /// A zone offset read from text outside -15:59 to +15:59 (22009).
    #[error("{0}")]
    InvalidTimezoneDisplacement(String),
    #[error("function {0} does not exist")]
    UndefinedFunction(String),
    /// A function's argument with a value it has no answer for (`split_part(s, d, 0)`,
    /// INSTR's occurrence 0): PostgreSQL's 22023.
    #[error("{0}")]
    InvalidFunctionArgument(String),
    /// A negative substring length (22011).
    #[error("{0}")]
    SubstringError(String),
    /// A power or root with no real value (`sqrt(-1)`, `power(0, -1)`): 2201F.
    #[error("{0}")]
    InvalidPowerArgument(String),
    /// A `to_char` template that means nothing (`99.9.9`, `S9S9`): PostgreSQL's 42601.
    #[error("{0}")]
    FormatSyntax(String),
    /// A result past a limit of the implementation (`repeat('x', 2000000000)`: 54000).
    #[error("{0}")]
    ProgramLimitExceeded(String),
    /// More elements than a construct takes (`CUBE` of more than 12: 54011).
    #[error("{0}")]
    TooManyColumns(String),
    /// A statement past what the planner takes (more than 4096 grouping sets: 54001).
    #[error("{0}")]
    StatementTooComplex(String),
    /// Text that is no array (22P02).
    #[error("malformed array literal: \"{0}\"")]
    MalformedArray(String),
    /// Types that cannot meet (`ARRAY[1, true]`, a subscript of a non-array): 42804,
    /// with PostgreSQL's own message.
    #[error("{0}")]
    TypeConflict(String),
    #[error("type \"{0}\" does not exist")]
    UndefinedType(String),
    /// A named object of another kind than those with their own errors, missing
    /// (42704: a window name).
    #[error("{0}")]
    UndefinedObject(String),
    /// An escape string of more than one character (22025).
    #[error("{0}")]
    InvalidEscapeString(String),
    /// More than two escape-double-quote separators in a SQL regular expression (2200C).
    #[error("{0}")]
    InvalidUseOfEscape(String),
    /// A regular expression that does not compile (2201B).
    #[error("{0}")]
    InvalidRegex(String),
    /// A schema name no catalog object is in (`'nope'::regnamespace`): 3F000.
    #[error("schema \"{0}\" does not exist")]
    UndefinedSchema(String),
    /// ALTER ... SET SCHEMA onto a name the schema has (42P07).
    #[error("relation \"{name}\" already exists in schema \"{schema}\"")]
    DuplicateRelationInSchema { name: String, schema: String },
    /// CREATE SCHEMA of a name taken (42P06).
    #[error("schema \"{0}\" already exists")]
    DuplicateSchema(String),
    /// A CREATE of an unqualified name while no schema of the search path exists (3F000).
    #[error("no schema has been selected to create in")]
    NoSchemaSelected,
    /// A name reserved for the system (`CREATE SCHEMA pg_x`): 42939, with its DETAIL.
    #[error("{message}")]
    ReservedName { message: String, detail: String },
    #[error("operator does not exist: {0}")]
    DatatypeMismatch(String),
    /// An operator with no variant for its operands' types (`numeric & integer`):
    /// PostgreSQL's 42883.
    #[error("operator does not exist: {0}")]
    UndefinedOperator(String),
    /// A relation of the wrong kind for the statement (a sequence changed by DML, DROP
    /// SEQUENCE of a table): PostgreSQL's 42809.
    #[error("{0}")]
    WrongObjectType(String),
    /// A sequence at its end without CYCLE (2200H).
    #[error("{0}")]
    SequenceLimit(String),
    /// `currval` before `nextval`, and the like (55000).
    #[error("{0}")]
    ObjectNotInPrerequisiteState(String),
    #[error("new row for relation \"{}\" violates check constraint \"{constraint}\"", visible_name(.table))]
    CheckViolation { table: String, constraint: String },
    #[error("check constraint \"{constraint}\" of relation \"{table}\" is violated by some row")]
    CheckViolatedByRow { table: String, constraint: String },
    /// A row whose foreign key finds no parent row (23503).
    #[error(
        "insert or update on table \"{}\" violates foreign key constraint \"{}\": {detail}",
        visible_name(.table),
        visible_name(.constraint)
    )]
    ForeignKeyViolation { table: String, constraint: String, detail: String },
    /// A parent key still referenced (23503).
    #[error(
        "update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{}\": {detail}",
        visible_name(.table),
        visible_name(.constraint),
        visible_name(.child)
    )]
    ForeignKeyReferenced { table: String, constraint: String, child: String, detail: String },
    /// A definition that cannot be used, as a view defined in terms of itself (42P17).
    #[error("{0}")]
    InvalidObjectDefinition(String),
    /// A recursive WITH query not of the form a recursive query must have (42P19).
    #[error("{0}")]
    InvalidRecursion(String),
    /// A window function where none may be, or a frame that cannot be (42P20).
    #[error("{0}")]
    WindowingError(String),
    /// An object other objects depend on, dropped without CASCADE (2BP01): `message`
    /// names the object, `detail` has a line per dependent object (PostgreSQL's DETAIL),
    /// `hint` says what to do (its HINT).
    #[error("{message}")]
    DependentObjects { message: String, detail: String, hint: Option<String> },
    /// `ALTER COLUMN ... TYPE` of a column a view reads (0A000, as PostgreSQL's).
    #[error("cannot alter type of a column used by a view or rule")]
    ColumnUsedByView { view: String, column: String },
    /// A foreign key that cannot be (42830: no unique constraint on the referenced
    /// columns).
    #[error("{0}")]
    InvalidForeignKey(String),
    /// A reference a clause cannot make (42P10: an ORDER BY key of an aggregate with
    /// DISTINCT that is not one of its arguments).
    #[error("{0}")]
    InvalidColumnReference(String),
    /// A NULL where the statement needs a value (22004: an array subscript in an
    /// assignment).
    #[error("{0}")]
    NullValueNotAllowed(String),
    /// A RANGE frame's offset for an ORDER BY key of a type it cannot be added to or
    /// taken from (0A000, PostgreSQL's words; `offset` None: no offset type fits `key`).
    #[error("RANGE with offset PRECEDING/FOLLOWING is not supported for column type {key}{}", offset.as_ref().map_or(String::new(), |o| format!(" and offset type {o}")))]
    RangeOffsetType { key: String, offset: Option<String> },
    /// A window frame's offset below zero (22013, PostgreSQL's
    /// invalid_preceding_or_following_size).
    #[error("{0}")]
    InvalidFrameOffset(String),
    /// A value given for a GENERATED ALWAYS column (428C9).
    #[error("{0}")]
    GeneratedAlways(String),
    #[error("column \"{0}\" of relation \"{1}\" already exists")]
    DuplicateColumn(String, String),
    /// A table definition that cannot be (PostgreSQL's 42P16).
    #[error("{0}")]
    InvalidTableDefinition(String),
    /// A conversion between types that has none (PostgreSQL's 42846).
    #[error("{0}")]
    CannotCoerce(String),
    #[error("{0}")]
    InvalidRowCount(String),
    /// `width_bucket`'s bounds or count unusable (2201G).
    #[error("{0}")]
    WidthBucketArgument(String),
    /// TABLESAMPLE's percentage or seed unusable (2202H).
    #[error("{0}")]
    TablesampleArgument(String),
    #[error("unrecognized configuration parameter \"{0}\"")]
    UnknownParameter(String),
    #[error("invalid value for parameter \"{parameter}\": \"{value}\" (allowed: {allowed})")]
    InvalidParameterValue { parameter: String, value: String, allowed: String },
    #[error("parameter \"{0}\" cannot be changed without restarting the database")]
    StaticParameter(String),
    #[error("savepoint \"{0}\" does not exist")]
    NoSuchSavepoint(String),
    #[error("deadlock detected: {0}")]
    Deadlock(String),
    /// A lock another transaction holds, where waiting is not possible (a database driven
    /// by one thread, see `locks::OnConflict`).
    #[error("could not obtain lock on {0}")]
    LockNotAvailable(String),
    /// The statement stopped at a row lock another transaction holds and left its wait
    /// to the caller, which runs it again once the wait ends (see `lock_wait`). Never
    /// reaches a client.
    #[error("the statement waits for a row lock (its wait was left to the caller)")]
    LockWaitDeferred,
    /// The statement was interrupted by a cancel request (`CancelHandle::cancel`).
    #[error("canceling statement due to user request")]
    Canceled,
    /// The statement ran or waited longer than the session's `statement_timeout`.
    #[error("canceling statement due to statement timeout")]
    StatementTimeout,
    #[error("{0} is not supported")]
    Unsupported(String),
    /// A construct PostgreSQL refuses too (its 0A000), in its words: "WITH clause
    /// containing a data-modifying statement must be at the top level".
    #[error("{0}")]
    FeatureNotSupported(String),
    #[error("\"{0}\" is a read-only view of the database's state: it cannot be changed")]
    ReadOnlyView(String),
    #[error("bind parameter ${index} is {problem}")]
    BindParameter { index: usize, problem: String },
    #[error("corrupt change record in the redo log: {0}")]
    CorruptChange(String),
    /// A file of the database (checkpoint image, snapshot, directory) could not be read or
    /// written: the environment's failure, not the data's.
    #[error("{op} {}: {source}", path.display())]
    Storage {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: Arc<std::io::Error>,
    },
    /// An error of the redo log (its interruptions become [`DbError::Canceled`] and
    /// [`DbError::StatementTimeout`], see the `From` impl).
    #[error(transparent)]
    Redo(RedoError),
    /// A snapshot or report of the workload repository (`awr`).
    #[error(transparent)]
    Awr(#[from] crate::awr::AwrError),
    /// The instance stopped serving (fail-stop): its redo log failed, or a committed change
    /// could not be applied. Nothing more is read or written until it is restarted, which
    /// runs recovery: the redo decides what survived.
    #[error("the instance has terminated and must be restarted to recover: {0}")]
    InstanceTerminated(Termination),
    /// Another process has the database directory open (see `Database::open`).
    #[error(
        "the database directory {} is in use by another process{}: a database is opened by one \
         process at a time. Stop that process first, or work through it: with a running `redodb \
         serve`, take snapshots with EXEC snapshot (psql -c 'EXEC snapshot'); `redodb report` \
         only reads stored snapshots and works beside it",
        dir.display(),
        holder_pid.map_or(String::new(), |pid| format!(" (pid {pid})"))
    )]
    DirectoryInUse { dir: PathBuf, holder_pid: Option<u32> },
    /// The lock file of the database directory could not be created or locked.
    #[error("locking the database directory {}: {source}", dir.display())]
    DirectoryLock {
        dir: PathBuf,
        #[source]
        source: Arc<std::io::Error>,
    },
}

/// Why an instance terminated (see [`DbError::InstanceTerminated`]).
#[derive(Debug, Clone, thiserror::Error)]
pub enum Termination {
    /// No member of a log group took a write or sync: commits whose durability is unknown
    /// were already visible, so nothing may be read any more (Oracle terminates the
    /// instance when LGWR cannot write; PostgreSQL PANICs).
    #[error("the redo log failed: {0}")]
    LogFailed(Arc<redo::LogFailure>),
    /// Commit `scn` is in the log but could not be applied to the committed state, which
    /// may now hold part of it: a bug. The redo still holds every committed change.
    #[error("commit {scn} could not be applied to the committed state: {detail}")]
    ApplyFailed { scn: redo::Scn, detail: String },
}

/// Where in a statement's text an error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextPosition {
    /// The parser's line and column (both from 1), until the statement's text turns them
    /// into a character position (`DbError::located_in`).
    LineColumn { line: u64, column: u64 },
    /// PostgreSQL's position: a character offset into the statement's text, from 1.
    Char(usize),
}

impl DbError {
    /// This error at `line` and `column` of the statement's text (the parser's span of
    /// the name it is about). An error already placed keeps its place (the innermost
    /// name is the one to point at); an unknown place (line 0: a name the database
    /// made, not the parser) adds none.
    pub(crate) fn at(self, line: u64, column: u64) -> DbError {
        if line == 0 || matches!(self, DbError::At { .. }) {
            return self;
        }
        DbError::At { error: Box::new(self), at: TextPosition::LineColumn { line, column } }
    }

    /// The error `f` makes of this one's kind, at this one's place in the text.
    pub(crate) fn map_kind(self, f: impl FnOnce(DbError) -> DbError) -> DbError {
        match self {
            DbError::At { error, at } => DbError::At { error: Box::new(f(*error)), at },
            other => f(other),
        }
    }

    /// This error with its line and column turned into a character position in `text`,
    /// the statement they were found in.
    pub(crate) fn located_in(self, text: &str) -> DbError {
        match self {
            DbError::At { error, at: TextPosition::LineColumn { line, column } } => {
                let line = usize::try_from(line).unwrap_or(usize::MAX);
                let column = usize::try_from(column).unwrap_or(usize::MAX);
                let before: usize =
                    text.split('\n').take(line.saturating_sub(1)).map(|l| l.chars().count() + 1).sum();
                DbError::At { error, at: TextPosition::Char(before.saturating_add(column.max(1))) }
            }
            other => other,
        }
    }

    /// This error without a place (found in another text than the statement's: a view's
    /// stored query).
    pub(crate) fn unplaced(self) -> DbError {
        match self {
            DbError::At { error, .. } => *error,
            other => other,
        }
    }

    /// PostgreSQL's DETAIL of the error, where it has one.
    pub fn detail(&self) -> Option<String> {
        match self.kind() {
            DbError::DependentObjects { detail, .. } | DbError::ReservedName { detail, .. } => {
                Some(detail.clone())
            }
            DbError::ColumnUsedByView { view, column } => {
                Some(format!("rule _RETURN on view {view} depends on column \"{column}\""))
            }
            DbError::LateralAcrossOuterJoin(_) => {
                Some("The combining JOIN type must be INNER or LEFT for a LATERAL reference.".into())
            }
            _ => None,
        }
    }

    /// PostgreSQL's HINT of the error, where it has one.
    pub fn hint(&self) -> Option<&str> {
        match self.kind() {
            DbError::DependentObjects { hint, .. } => hint.as_deref(),
            DbError::InvalidFromReference { hint, .. } | DbError::UnreachableColumn { hint, .. } => {
                Some(hint)
            }
            DbError::RangeOffsetType { offset: Some(_), .. } => {
                Some("Cast the offset value to an appropriate type.")
            }
            DbError::InvalidEscapeString(_) => Some("Escape string must be empty or one character."),
            _ => None,
        }
    }

    /// The error itself, without its place in the text.
    pub fn kind(&self) -> &DbError {
        match self {
            DbError::At { error, .. } => error,
            other => other,
        }
    }

    /// PostgreSQL's error position: a character offset into the statement's text, from 1.
    pub fn position(&self) -> Option<usize> {
        match self {
            DbError::Syntax { position, .. } => Some(*position).filter(|&p| p > 0),
            DbError::At { at: TextPosition::Char(p), .. } => Some(*p),
            _ => None,
        }
    }

    /// A JSON syntax error said of type `ty` (`jsonb` where the text was read as one).
    pub(crate) fn for_type(self, ty: &str) -> DbError {
        match self {
            DbError::InvalidJson { detail, .. } => DbError::InvalidJson { ty: ty.into(), detail },
            other => other,
        }
    }

    pub(crate) fn storage(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> DbError {
        DbError::Storage { op, path: path.into(), source: Arc::new(source) }
    }

    /// The PostgreSQL SQLSTATE for this error.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            DbError::Syntax { .. } => "42601",
            DbError::At { error, .. } => error.sqlstate(),
            DbError::UnknownTable(_) => "42P01",
            DbError::TableExists(_) => "42P07",
            DbError::UnknownColumn(_) | DbError::UnknownQualifiedColumn { .. } => "42703",
            DbError::MissingFromEntry(_) | DbError::InvalidFromReference { .. } => "42P01",
            DbError::UnreachableColumn { .. } => "42703",
            DbError::LateralAcrossOuterJoin(_) => "42P10",
            DbError::AmbiguousColumn(_) => "42702",
            DbError::DuplicateValue { .. } => "23505",
            DbError::UnknownIndex(_) => "42704",
            DbError::NoConflictTarget => "42P10",
            DbError::DuplicateAlias(_) => "42712",
            DbError::CardinalityViolation | DbError::MergeRowTwice => "21000",
            DbError::DuplicateKey { .. } => "23505",
            DbError::NotNull { .. } => "23502",
            DbError::TypeMismatch { .. } => "22P02",
            DbError::ValueTooLong { .. } => "22001",
            DbError::DivisionByZero => "22012",
            DbError::Grouping(_) => "42803",
            DbError::NumericOutOfRange(_) | DbError::NumericOverflow(_) => "22003",
            DbError::InvalidArgument(_) => "22023",
            DbError::InvalidJson { .. } => "22P02",
            DbError::UntranslatableCharacter(_) => "22P05",
            DbError::InvalidDatetime(_) => "22007",
            DbError::DatetimeOverflow(_) => "22008",
            DbError::InvalidTimezoneDisplacement(_) => "22009",
            DbError::UndefinedFunction(_) => "42883",
            DbError::InvalidFunctionArgument(_) => "22023",
            DbError::SubstringError(_) => "22011",
            DbError::InvalidPowerArgument(_) => "2201F",
            DbError::FormatSyntax(_) => "42601",
            DbError::ProgramLimitExceeded(_) => "54000",
            DbError::TooManyColumns(_) => "54011",
            DbError::StatementTooComplex(_) => "54001",
            DbError::UndefinedType(_) | DbError::UndefinedObject(_) => "42704",
            DbError::UndefinedSchema(_) | DbError::NoSchemaSelected => "3F000",
            DbError::DuplicateSchema(_) => "42P06",
            DbError::DuplicateRelationInSchema { .. } => "42P07",
            DbError::ReservedName { .. } => "42939",
            DbError::InvalidRegex(_) => "2201B",
            DbError::InvalidEscapeString(_) => "22025",
            DbError::InvalidUseOfEscape(_) => "2200C",
            DbError::DatatypeMismatch(_) => "42804",
            DbError::UndefinedOperator(_) => "42883",
            DbError::TypeConflict(_) => "42804",
            DbError::MalformedArray(_) => "22P02",
            DbError::CannotCoerce(_) => "42846",
            DbError::WrongObjectType(_) => "42809",
            DbError::SequenceLimit(_) => "2200H",
            DbError::ObjectNotInPrerequisiteState(_) => "55000",
            DbError::GeneratedAlways(_) => "428C9",
            DbError::ForeignKeyViolation { .. } | DbError::ForeignKeyReferenced { .. } => "23503",
            DbError::DependentObjects { .. } => "2BP01",
            DbError::ColumnUsedByView { .. } => "0A000",
            DbError::WindowingError(_) => "42P20",
            DbError::InvalidRecursion(_) => "42P19",
            DbError::InvalidObjectDefinition(_) => "42P17",
            DbError::InvalidForeignKey(_) => "42830",
            DbError::InvalidColumnReference(_) => "42P10",
            DbError::NullValueNotAllowed(_) => "22004",
            DbError::InvalidFrameOffset(_) => "22013",
            DbError::RangeOffsetType { .. } => "0A000",
            DbError::CheckViolation { .. } | DbError::CheckViolatedByRow { .. } => "23514",
            DbError::DuplicateColumn(..) => "42701",
            DbError::InvalidTableDefinition(_) => "42P16",
            DbError::InvalidRowCount(_) => "2201W",
            DbError::WidthBucketArgument(_) => "2201G",
            DbError::TablesampleArgument(_) => "2202H",
            DbError::UnknownParameter(_) => "42704",
            DbError::InvalidParameterValue { .. } => "22023",
            DbError::StaticParameter(_) => "55P02",
            DbError::NoSuchSavepoint(_) => "3B001",
            DbError::Deadlock(_) => "40P01",
            DbError::LockNotAvailable(_) => "55P03",
            DbError::Canceled | DbError::StatementTimeout => "57014",
            // A wait in progress: the class of lock waits' errors (55P03's).
            DbError::LockWaitDeferred => "55000",
            DbError::Unsupported(_) | DbError::FeatureNotSupported(_) => "0A000",
            DbError::ReadOnlyView(_) => "42809",
            DbError::BindParameter { .. } => "08P01",
            DbError::CorruptChange(_) => "XX001",
            DbError::InstanceTerminated(Termination::LogFailed(_)) => "58030",
            DbError::InstanceTerminated(Termination::ApplyFailed { .. }) => "XX000",
            DbError::Storage { source, .. } => match source.raw_os_error() {
                Some(libc::ENOSPC | libc::EDQUOT) => "53100",
                _ => "58030",
            },
            DbError::Redo(RedoError::Config(_)) => "22023",
            DbError::Redo(RedoError::StaticParameter { .. }) => "55P02",
            DbError::Redo(RedoError::TooLarge(_) | RedoError::TransactionTooLarge { .. }) => "54000",
            DbError::Redo(RedoError::Shutdown) => "57P01",
            DbError::Redo(RedoError::CheckpointIncomplete) => "53000",
            DbError::Redo(_) => "58030",
            DbError::Awr(e) => e.sqlstate(),
            // object_in_use, as PostgreSQL answers for a database others are using.
            DbError::DirectoryInUse { .. } => "55006",
            DbError::DirectoryLock { .. } => "58030",
        }
    }
}

impl From<RedoError> for DbError {
    /// The log's interruptions are the session's own cancel or statement timeout (the
    /// session raised its interrupt, or set its deadline: see `sessions::CancelFlag`).
    fn from(e: RedoError) -> DbError {
        match e {
            RedoError::Interrupted(redo::InterruptCause::Cancelled) => DbError::Canceled,
            RedoError::Interrupted(redo::InterruptCause::DeadlinePassed) => DbError::StatementTimeout,
            other => DbError::Redo(other),
        }
    }
}

impl From<redo::InterruptCause> for DbError {
    fn from(cause: redo::InterruptCause) -> DbError {
        RedoError::Interrupted(cause).into()
    }
}

pub type DbResult<T> = std::result::Result<T, DbError>;

/// A message for the client beside a statement's result (PostgreSQL's NoticeResponse):
/// a NOTICE for something done differently than asked (`CREATE TABLE IF NOT EXISTS` on
/// a table that exists), a WARNING for something the client should change (a
/// deprecated parameter).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub severity: Severity,
    /// PostgreSQL's SQLSTATE for it ("00000" for a plain notice).
    pub sqlstate: &'static str,
    pub message: String,
    /// PostgreSQL's DETAIL of the notice, where it has one.
    pub detail: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Notice,
    Warning,
}

impl Severity {
    /// The severity's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Notice => "NOTICE",
            Severity::Warning => "WARNING",
        }
    }
}

impl Notice {
    pub fn plain(message: String) -> Notice {
        Notice::with_state("00000", message)
    }

    /// A NOTICE with PostgreSQL's SQLSTATE for it (`42P07` for "already exists, skipping").
    pub fn with_state(sqlstate: &'static str, message: String) -> Notice {
        Notice { severity: Severity::Notice, sqlstate, message, detail: None }
    }

    /// A NOTICE with a DETAIL (`drop cascades to 2 other objects`, and which).
    pub fn with_detail(message: String, detail: String) -> Notice {
        Notice { detail: Some(detail), ..Notice::plain(message) }
    }

    /// A deprecated feature was used (SQLSTATE 01P01, PostgreSQL's deprecated_feature).
    pub fn deprecated(message: String) -> Notice {
        Notice { severity: Severity::Warning, sqlstate: "01P01", message, detail: None }
    }
}
