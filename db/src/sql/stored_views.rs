//! Views (`CREATE [OR REPLACE] VIEW name [(columns)] AS query`, `DROP VIEW`): a relation
//! in the tables' namespace whose schema holds the query's text (`TableSchema::view`)
//! and the columns it gives, logged and recovered as a table's schema is. A FROM clause
//! that names a view plans its query there, as a subquery in FROM (`relation_named`),
//! so the view always reads the tables as they are now. Views are read-only: an INSERT,
//! UPDATE or DELETE on one gets 55000, as PostgreSQL's for a view it cannot update.
//!
//! Dependencies, as PostgreSQL's `pg_depend` rows of a view's rule: while CREATE VIEW
//! plans the query, the relations it names (`note_relation`) and the columns its names
//! resolve to (`note_column`, called by `Scope::resolve` and `Scope::star`) are recorded
//! in the view's schema (`TableSchema::view_reads`), logged and recovered with it. DROP
//! TABLE / DROP VIEW / DROP COLUMN of something a view reads fails with 2BP01 unless
//! CASCADE, which drops the dependent views (transitively, `dependents`); ALTER COLUMN
//! TYPE of a column a view reads fails with 0A000.
//!
//! Renames: PostgreSQL binds a view to objects, not names. Here a view's query is kept
//! as its text (the deparse of a plan back to SQL would be a second, riskier copy of the
//! query), so the binding is kept beside it instead: each read holds the name written in
//! the text and the object's name now, which RENAME TO and RENAME COLUMN update in every
//! dependent view (in the same DDL transaction). Planning a view's query resolves a name
//! its text wrote through those reads (`bound_read`), reading the renamed relation under
//! the written names, so the text never needs rewriting. Where the text is shown
//! (`pg_get_viewdef`, psql's `\d+`), `definition_now` renames the names the binding maps
//! in a parse of it, as PostgreSQL's deparse shows a view under today's names; and a
//! whole row of a renamed table has its fields' names of now (`column_name_now`), as
//! the row type of PostgreSQL's does.
//!
//! (The `v$` views of the database's state are another thing: `crate::views`.)

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use sqlparser::ast;

use crate::change::Change;
use crate::database::{index_named, Session};
use crate::error::{DbError, DbResult};
use crate::schema::{Column, TableSchema, ViewColumn, ViewRead};
use crate::sql::expr::{ident_name, object_name, Relation};
use crate::sql::query::QueryPlan;
use crate::sql::QueryResult;
use crate::temp_tables::visible_name;
use crate::value::DataType;

/// How deep views are being expanded on this thread (a view of a view ...): a cycle
/// made by `CREATE OR REPLACE` stops here instead of overflowing the stack.
const MAX_DEPTH: u32 = 32;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// What the CREATE VIEW planning its query on this thread has found it reads.
    static RECORDING: RefCell<Option<Recording>> = const { RefCell::new(None) };
    /// The reads of the views whose queries are being planned on this thread, innermost
    /// last: the names their texts wrote, bound to the objects they meant.
    static BINDINGS: RefCell<Vec<Vec<ViewRead>>> = const { RefCell::new(Vec::new()) };
}

/// PostgreSQL's HINT for a DROP that other objects depend on.
pub(crate) const CASCADE_HINT: &str = "Use DROP ... CASCADE to drop the dependent objects too.";

/// The relations and columns a CREATE VIEW's query reads, collected while it is planned.
#[derive(Default)]
struct Recording {
    reads: Vec<ViewRead>,
    /// The plans of the views it reads, by name: a column in scope is one of such a view
    /// only when its relation's plan is that very plan (a subquery's columns are no
    /// dependency). Held here, the plans stay alive while the recording compares them.
    view_plans: Vec<(String, Arc<QueryPlan>)>,
}

/// Recording while a CREATE VIEW plans its query; stopped however the planning ends.
struct RecordingReads;

impl RecordingReads {
    fn start() -> RecordingReads {
        RECORDING.with_borrow_mut(|r| *r = Some(Recording::default()));
        RecordingReads
    }

    fn finish(self) -> Vec<ViewRead> {
        RECORDING.with_borrow_mut(|r| r.take()).map(|r| r.reads).unwrap_or_default()
    }
}

impl Drop for RecordingReads {
    fn drop(&mut self) {
        RECORDING.with_borrow_mut(|r| *r = None);
    }
}

/// Planning a view's query: its bindings current, and a CREATE VIEW's recording paused
/// (what a view read by the new view reads is no dependency of the new one); both
/// restored however the planning ends.
struct PlanningView {
    paused: Option<Recording>,
}

impl PlanningView {
    fn enter(reads: &[ViewRead]) -> PlanningView {
        BINDINGS.with_borrow_mut(|b| b.push(reads.to_vec()));
        PlanningView { paused: RECORDING.with_borrow_mut(|r| r.take()) }
    }
}

impl Drop for PlanningView {
    fn drop(&mut self) {
        BINDINGS.with_borrow_mut(|b| b.pop());
        let paused = self.paused.take();
        RECORDING.with_borrow_mut(|r| *r = paused);
    }
}

/// Records that the query being planned for a CREATE VIEW names relation `name` (a
/// table, a view with its plan, or a sequence).
pub(crate) fn note_relation(name: &str, view_plan: Option<&Arc<QueryPlan>>) {
    RECORDING.with_borrow_mut(|recording| {
        let Some(recording) = recording else { return };
        if !recording.reads.iter().any(|r| r.relation == name) {
            recording.reads.push(ViewRead {
                relation: name.into(),
                written: name.into(),
                columns: Vec::new(),
            });
        }
        if let Some(plan) = view_plan {
            recording.view_plans.push((name.into(), plan.clone()));
        }
    });
}

/// Records that a name in the query being planned for a CREATE VIEW resolved to
/// `column` of `relation`, when that relation is one the view depends on.
pub(crate) fn note_column(relation: &Relation, column: &str) {
    RECORDING.with_borrow_mut(|recording| {
        let Some(recording) = recording else { return };
        if relation.function.is_some() {
            return;
        }
        let recorded = match &relation.derived {
            None => true,
            Some(plan) => {
                recording.view_plans.iter().any(|(n, p)| *n == relation.name && Arc::ptr_eq(p, plan))
            }
        };
        if !recorded {
            return;
        }
        // A catalog relation has no read: only the relations `note_relation` saw do.
        let Some(read) = recording.reads.iter_mut().find(|r| r.relation == relation.name) else { return };
        if !read.reads_column(column) {
            read.columns.push(ViewColumn { name: column.into(), written: column.into() });
        }
    });
}

/// The object the query of the view being planned meant by relation name `written`,
/// when it recorded one (a view created before dependencies were kept has none).
pub(crate) fn bound_read(written: &str) -> Option<ViewRead> {
    BINDINGS.with_borrow(|b| b.last()?.iter().find(|r| r.written == written).cloned())
}

/// The name now of the column the query of the view being planned calls `written` in
/// relation `relation` (its name now, or as written), when a rename changed it.
pub(crate) fn column_name_now(relation: &str, written: &str) -> Option<String> {
    BINDINGS.with_borrow(|b| {
        let read = b.last()?.iter().find(|r| r.relation == relation || r.written == relation)?;
        let column = read.columns.iter().find(|c| c.written == written)?;
        (column.name != written).then(|| column.name.clone())
    })
}

/// Relation `read.relation`'s schema as the view's query knows it: each column it reads
/// under the name its text wrote, and every other column out of its reach (see
/// `is_unread_column`).
pub(crate) fn schema_as_written(schema: Arc<TableSchema>, read: &ViewRead) -> Arc<TableSchema> {
    let visible = schema.visible_columns().len();
    let as_written: Vec<Option<&str>> = schema.columns[..visible]
        .iter()
        .map(|c| read.columns.iter().find(|r| r.name == c.name).map(|r| r.written.as_str()))
        .collect();
    if as_written.iter().zip(&schema.columns).all(|(w, c)| *w == Some(c.name.as_str())) {
        return schema;
    }
    let mut written = TableSchema::clone(&schema);
    for (i, name) in as_written.into_iter().enumerate() {
        written.columns[i].name = match name {
            Some(name) => name.to_string(),
            None => format!("{UNREAD}{i}"),
        };
    }
    Arc::new(written)
}

/// What starts the name of a column a view's query did not read, where the query is
/// planned: no identifier is spelled so (SQL text holds no NUL), and `Scope::star`
/// leaves such a column out. A column added to a table after the view was created thus
/// neither joins its `*` nor makes a name its text wrote ambiguous: PostgreSQL's views,
/// bound when created, are untouched by one either.
const UNREAD: char = '\0';

/// Whether a column in scope is one a view's query did not read (`schema_as_written`).
pub(crate) fn is_unread_column(name: &str) -> bool {
    name.starts_with(UNREAD)
}

/// What a DROP would take with it.
#[derive(Clone, Copy)]
pub(crate) enum Dropped<'a> {
    Relation(&'a str),
    Column { table: &'a str, column: &'a str },
}

/// The views that depend on `dropped`, directly or through other views, with the line
/// PostgreSQL's DETAIL gives each ("view w depends on view v"): depth first, each
/// level in the order the views were created (`TableSchema::view_number`).
pub(crate) fn dependents<'s>(
    schemas: impl Iterator<Item = &'s Arc<TableSchema>>,
    dropped: Dropped,
) -> Vec<(String, String)> {
    let all: Vec<&Arc<TableSchema>> = schemas.collect();
    let kind_of = |name: &str| match all.iter().find(|s| s.name == name) {
        Some(s) if s.view.is_some() => "view",
        Some(s) if s.sequence.is_some() => "sequence",
        _ => "table",
    };
    let mut views: Vec<&Arc<TableSchema>> = all.iter().copied().filter(|s| s.view.is_some()).collect();
    views.sort_by(|a, b| (a.view_number, &a.name).cmp(&(b.view_number, &b.name)));
    let (first, first_column) = match dropped {
        Dropped::Relation(r) => (r, None),
        Dropped::Column { table, column } => (table, Some(column)),
    };
    // The views reading `relation` (its `column` only, if given), each with its line,
    // last first: pushed on the work list, the first is taken first.
    let readers = |relation: &str, column: Option<&str>| -> Vec<(String, String)> {
        let mut found: Vec<(String, String)> = views
            .iter()
            .filter(|v| v.name != relation && v.name != first)
            .filter(|v| {
                v.view_reads
                    .iter()
                    .any(|r| r.relation == relation && column.is_none_or(|c| r.reads_column(c)))
            })
            .map(|v| {
                // A temporary relation by the name its user wrote.
                let (name, shown) = (visible_name(&v.name), visible_name(relation));
                let line = match column {
                    Some(c) => {
                        format!("view {name} depends on column {c} of {} {shown}", kind_of(relation))
                    }
                    None => format!("view {name} depends on {} {shown}", kind_of(relation)),
                };
                (v.name.clone(), line)
            })
            .collect();
        found.reverse();
        found
    };
    // Depth first with a work list (views of views are as deep as users make them): a
    // view is listed, then what reads it, then the next view of its level.
    let mut out: Vec<(String, String)> = Vec::new();
    let mut pending = readers(first, first_column);
    while let Some((view, line)) = pending.pop() {
        if out.iter().any(|(listed, _)| *listed == view) {
            continue;
        }
        pending.extend(readers(&view, None));
        out.push((view, line));
    }
    out
}

/// Parses a view's stored query text.
fn parse_query(name: &str, text: &str) -> DbResult<ast::Query> {
    sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_query())
        .map(|q| *q)
        .map_err(|e| DbError::CorruptChange(format!("the query of view \"{name}\": {e}")))
}

impl Session {
    /// The plan of view `schema`'s query, as a FROM clause that names it runs it.
    pub(crate) fn plan_view(&self, schema: &TableSchema) -> DbResult<crate::sql::query::QueryPlan> {
        let text = schema.view.as_deref().expect("a view");
        let query = parse_query(&schema.name, text)?;
        let depth = DEPTH.with(|d| d.get());
        if depth >= MAX_DEPTH {
            return Err(DbError::InvalidObjectDefinition(format!(
                "infinite recursion detected in the definition of view \"{}\"",
                schema.name
            )));
        }
        DEPTH.with(|d| d.set(depth + 1));
        let planning = PlanningView::enter(&schema.view_reads);
        // Places found in the view's text are no places in the statement's.
        let plan = self.plan_query_in(&query, &[], &[]).map_err(DbError::unplaced);
        drop(planning);
        DEPTH.with(|d| d.set(depth));
        plan
    }

    pub(crate) fn create_view_statement(&mut self, create: &ast::CreateView) -> DbResult<QueryResult> {
        if create.materialized || create.or_alter || create.secure {
            return Err(DbError::Unsupported("MATERIALIZED or SECURE views".into()));
        }
        if !matches!(create.options, ast::CreateTableOptions::None) || !create.cluster_by.is_empty() {
            return Err(DbError::Unsupported(format!("the view options of {}", create.name)));
        }
        if crate::sql::dml_with::modifies_data(&create.query) {
            return Err(DbError::FeatureNotSupported(
                "views must not contain data-modifying statements in WITH".into(),
            ));
        }
        let written = object_name(&create.name)?;
        if crate::views::is_view(&written) {
            return Err(DbError::TableExists(written));
        }
        // Planned now: names and types checked, the columns known, what it reads found.
        let recording = RecordingReads::start();
        let plan = self.plan_query_in(&create.query, &[], &[])?;
        let reads = recording.finish();
        // A view over a temporary table is temporary itself (PostgreSQL's NOTICE): it
        // could not outlive the session.
        let mut temporary = create.temporary || self.qualified_temporary(&create.name)?;
        if !temporary && reads.iter().any(|r| crate::temp_tables::is_temporary(&r.relation)) {
            temporary = true;
            self.notice("00000", format!("view \"{written}\" will be a temporary view"));
        }
        let name = if temporary {
            self.temp.made_any = true;
            self.temp_name(&written)
        } else {
            crate::temp_tables::check_permanent_name(&written)?;
            self.creation_name(&create.name)?
        };
        let existing = self.schema_of(&name).ok();
        match &existing {
            Some(s) if s.view.is_none() => {
                if create.if_not_exists {
                    return Ok(self.skipped(&name));
                }
                return Err(DbError::TableExists(name));
            }
            Some(_) if create.if_not_exists => return Ok(self.skipped(&name)),
            Some(_) if !create.or_replace => return Err(DbError::TableExists(name)),
            _ => {}
        }
        let mut columns: Vec<Column> = plan
            .columns()
            .iter()
            .map(|c| Column {
                name: c.name.clone(),
                ty: c.ty.unwrap_or(DataType::Text { max_chars: None }),
                nullable: true,
            })
            .collect();
        if create.columns.len() > columns.len() {
            return Err(DbError::Syntax {
                message: "CREATE VIEW specifies more column names than columns".into(),
                position: 0,
            });
        }
        for (column, named) in columns.iter_mut().zip(&create.columns) {
            column.name = ident_name(&named.name);
        }
        for (i, c) in columns.iter().enumerate() {
            if columns[..i].iter().any(|o| o.name == c.name) {
                return Err(DbError::DuplicateColumn(c.name.clone(), name.clone()));
            }
        }
        // With a column list, the view's query is stored with the names given.
        let mut query = create.query.as_ref().clone();
        if !create.columns.is_empty() {
            let names: Vec<String> = columns.iter().map(|c| quote(&c.name)).collect();
            query = parse_query(&name, &format!("SELECT * FROM ({query}) AS v ({})", names.join(", ")))?;
        }
        if let Some(old) = &existing {
            // PostgreSQL's rule: a replacement keeps the view's columns (it may add some
            // after them), so what reads the view still finds them.
            let old_columns = old.visible_columns();
            if columns.len() < old_columns.len() {
                return Err(DbError::InvalidTableDefinition("cannot drop columns from view".into()));
            }
            for (new, old) in columns.iter().zip(old_columns) {
                if new.name != old.name || new.ty != old.ty {
                    return Err(DbError::InvalidTableDefinition(format!(
                        "cannot change view column \"{}\" (to \"{}\" of type {})",
                        old.name,
                        new.name,
                        new.ty.name().to_lowercase()
                    )));
                }
            }
        }
        // A view's schema is logged with its columns' types, and no record is stored.
        if let Some(c) = columns.iter().find(|c| matches!(c.ty, DataType::Record(_))) {
            return Err(DbError::Unsupported(format!("the view column \"{}\" of type record", c.name)));
        }
        let mut schema = TableSchema::new(&name, columns, Vec::new())?;
        schema.view = Some(query.to_string());
        schema.view_reads = reads;
        let replacing = existing.is_some();
        // What it reads is locked too: a DROP of one of them waits, then sees the view.
        let mut locked = vec![name.as_str()];
        locked.extend(schema.view_reads.iter().map(|r| r.relation.as_str()).filter(|r| *r != name));
        self.ddl_tables(&locked, |st| {
            if st.has_table(&name) != replacing || index_named(st, &name).is_some() {
                return Err(DbError::TableExists(name.clone()));
            }
            if let Some(gone) = schema.view_reads.iter().find(|r| !st.has_table(&r.relation)) {
                return Err(DbError::UnknownTable(gone.relation.clone()));
            }
            let mut changes = Vec::new();
            let mut schema = schema.clone();
            if replacing {
                let old = st.table(&name)?.schema;
                if old.view.is_none() {
                    return Err(DbError::TableExists(name.clone()));
                }
                schema.view_number = old.view_number;
                // The view stays the same object: its comments stay (PostgreSQL keeps
                // them, keyed by the view's OID), the columns it keeps being first.
                schema.comment = old.comment.clone();
                schema.column_comments = old.column_comments.clone();
                changes.push(Change::DropTable { table: name.clone() });
            } else {
                schema.view_number = 1 + st.schemas().map(|s| s.view_number).max().unwrap_or(0);
            }
            changes.push(Change::CreateTable(schema));
            Ok(changes)
        })?;
        Ok(QueryResult::command("CREATE VIEW", 0))
    }

    fn skipped(&mut self, name: &str) -> QueryResult {
        self.notices.push(crate::error::Notice::with_state(
            "42P07",
            format!("relation \"{}\" already exists, skipping", crate::temp_tables::visible_name(name)),
        ));
        QueryResult::command("CREATE VIEW", 0)
    }

    pub(crate) fn drop_view_statement(
        &mut self,
        names: &[ast::ObjectName],
        if_exists: bool,
        cascade: bool,
    ) -> DbResult<QueryResult> {
        let names = names.iter().map(|n| self.relation_name(n)).collect::<DbResult<Vec<_>>>()?;
        for name in &names {
            match self.schema_of(name) {
                Ok(s) if s.view.is_some() => {}
                Ok(_) => return Err(DbError::WrongObjectType(format!("\"{name}\" is not a view"))),
                Err(DbError::UnknownTable(_)) if if_exists => {}
                Err(e) => return Err(e),
            }
        }
        let mut cascaded: Vec<String> = Vec::new();
        for name in &names {
            if cascaded.contains(name) {
                continue;
            }
            if self.schema_of(name).is_err() {
                self.notices
                    .push(crate::error::Notice::plain(format!("view \"{name}\" does not exist, skipping")));
                continue;
            }
            let mut tables = vec![name.as_str()];
            let locked = self.views_depending(Dropped::Relation(name));
            tables.extend(locked.iter().map(String::as_str));
            let mut dropped = Vec::new();
            self.ddl_tables(&tables, |st| {
                st.table(name)?;
                let what = format!("view {name}");
                let mut changes = cascade_to_views(
                    st.schemas(),
                    Dropped::Relation(name),
                    &what,
                    &names,
                    cascade,
                    &mut dropped,
                )?;
                changes.push(Change::DropTable { table: name.clone() });
                Ok(changes)
            })?;
            self.notice_cascade(&dropped);
            cascaded.extend(dropped.into_iter().map(|(view, _)| view));
        }
        Ok(QueryResult::command("DROP VIEW", 0))
    }

    /// The views that depend on `dropped` now, for a DDL to lock before it looks again
    /// under the locks.
    pub(crate) fn views_depending(&self, dropped: Dropped) -> Vec<String> {
        self.db
            .read_catalog(|st| dependents(st.schemas(), dropped))
            .into_iter()
            .map(|(view, _)| view)
            .collect()
    }

    /// PostgreSQL's notice of the views a CASCADE dropped (`cascade_to_views`).
    pub(crate) fn notice_cascade(&mut self, dropped: &[(String, String)]) {
        match dropped {
            [] => {}
            [(view, _)] => {
                self.notices.push(crate::error::Notice::plain(format!("drop cascades to view {view}")))
            }
            many => {
                let lines: Vec<String> =
                    many.iter().map(|(view, _)| format!("drop cascades to view {view}")).collect();
                self.notices.push(crate::error::Notice::with_detail(
                    format!("drop cascades to {} other objects", many.len()),
                    lines.join("\n"),
                ));
            }
        }
    }
}

/// Under a DROP's locks (`what` it drops: "table t", "column c of table t"): the views
/// that depend on `dropped` and are not among `dropping` (the statement's own). Without
/// CASCADE, any is 2BP01 with PostgreSQL's DETAIL and HINT; with it, the changes that
/// drop them, their names and lines added to `cascaded`.
pub(crate) fn cascade_to_views<'s>(
    schemas: impl Iterator<Item = &'s Arc<TableSchema>>,
    dropped: Dropped,
    what: &str,
    dropping: &[String],
    cascade: bool,
    cascaded: &mut Vec<(String, String)>,
) -> DbResult<Vec<Change>> {
    let found: Vec<(String, String)> =
        dependents(schemas, dropped).into_iter().filter(|(view, _)| !dropping.contains(view)).collect();
    if found.is_empty() {
        return Ok(Vec::new());
    }
    if !cascade {
        let lines: Vec<&str> = found.iter().map(|(_, line)| line.as_str()).collect();
        return Err(DbError::DependentObjects {
            message: format!("cannot drop {what} because other objects depend on it"),
            detail: lines.join("\n"),
            hint: Some(CASCADE_HINT.into()),
        });
    }
    let changes = found.iter().map(|(view, _)| Change::DropTable { table: view.clone() }).collect();
    cascaded.extend(found);
    Ok(changes)
}

/// A name as SQL text: quoted unless it is a plain lowercase identifier.
fn quote(name: &str) -> String {
    if !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// Refuses a change of a view's rows (it has none).
pub(crate) fn refuse_view(schema: &TableSchema, verb: &str) -> DbResult<()> {
    match schema.view {
        Some(_) => Err(DbError::ObjectNotInPrerequisiteState(format!(
            "cannot {verb} view \"{}\": views are read-only (change the tables it reads)",
            schema.name
        ))),
        None => Ok(()),
    }
}

/// A rename a view's reads follow.
#[derive(Clone, Copy)]
pub(crate) enum Renamed<'a> {
    /// `ALTER TABLE relation RENAME TO to`.
    Relation { to: &'a str },
    /// `ALTER TABLE relation RENAME COLUMN from TO to`.
    Column { from: &'a str, to: &'a str },
}

/// Under a rename's locks: the schemas of the views reading `relation`, their reads
/// following the rename (their texts keep the names written), as `Change::AlterTable`s
/// logged in the rename's transaction.
pub(crate) fn follow_rename_in_views<'s>(
    schemas: impl Iterator<Item = &'s Arc<TableSchema>>,
    relation: &str,
    renamed: Renamed,
) -> DbResult<Vec<Change>> {
    let mut changes = Vec::new();
    for view in schemas.filter(|s| s.view.is_some() && s.name != relation) {
        let mut schema = TableSchema::clone(view);
        let mut changed = false;
        for read in schema.view_reads.iter_mut().filter(|r| r.relation == relation) {
            match renamed {
                Renamed::Relation { to } => {
                    read.relation = to.to_string();
                    changed = true;
                }
                Renamed::Column { from, to } => {
                    for column in read.columns.iter_mut().filter(|c| c.name == from) {
                        column.name = to.to_string();
                        changed = true;
                    }
                }
            }
        }
        if changed {
            changes.push(Change::AlterTable(schema.validated()?));
        }
    }
    Ok(changes)
}

/// Under an `ALTER COLUMN ... TYPE`'s lock: refused with 0A000 when a view reads the
/// column, as PostgreSQL refuses it (the view's result type would change under it).
pub(crate) fn refuse_type_change<'s>(
    schemas: impl Iterator<Item = &'s Arc<TableSchema>>,
    table: &str,
    column: &str,
) -> DbResult<()> {
    match dependents(schemas, Dropped::Column { table, column }).into_iter().next() {
        Some((view, _)) => Err(DbError::ColumnUsedByView { view, column: column.to_string() }),
        None => Ok(()),
    }
}

/// View `schema`'s query as `pg_get_viewdef` shows it: its text with the names of the
/// relations and columns it reads as they are now (RENAME TO and RENAME COLUMN since the
/// view was made), as PostgreSQL's deparse of a view bound to objects shows them. A
/// renamed column that is a whole select-list item keeps the output name it gave, as an
/// alias (`b.title AS name`). Names are matched the way the query resolved them: a
/// qualified one through its FROM item, an unqualified one through the FROM item of its
/// SELECT (or an enclosing one) that read a column so written; a name in the query's
/// ORDER BY that is an output column's name stays.
pub(crate) fn definition_now(schema: &TableSchema) -> String {
    let text = schema.view.as_deref().expect("a view");
    let renamed = schema
        .view_reads
        .iter()
        .any(|read| read.relation != read.written || read.columns.iter().any(|c| c.name != c.written));
    let now = match renamed {
        true => match parse_query(&schema.name, text) {
            Ok(mut query) => {
                let mut renaming = Renaming { reads: &schema.view_reads, scopes: Vec::new() };
                let _ = ast::VisitMut::visit(&mut query, &mut renaming);
                query.to_string()
            }
            Err(_) => text.to_string(),
        },
        false => text.to_string(),
    };
    // `(expr).*` as written, not as the marker the parser was given (`record_star`).
    let marker = format!(").\"{}\"", crate::sql::record_star::FIELDS_MARKER);
    now.replace(&marker, ").*")
}

/// The FROM items of one SELECT that are relations the view reads.
struct RenameScope<'r> {
    /// (the name the query qualifies the item's columns by, its read; None for an
    /// item whose columns an alias list renames, or a subquery or function).
    items: Vec<(String, Option<&'r ViewRead>)>,
    /// The output names of the SELECT, which its query's ORDER BY may mean.
    outputs: Vec<String>,
    /// The SELECT is behind: what is visited now is its query's ORDER BY or LIMIT.
    in_tail: bool,
    /// WITH queries' names, which are no stored relations.
    ctes: Vec<String>,
}

struct Renaming<'r> {
    reads: &'r [ViewRead],
    scopes: Vec<RenameScope<'r>>,
}

/// A name as an identifier of the query text (quoted unless plain lowercase).
fn name_ident(name: &str) -> ast::Ident {
    match quote(name).starts_with('"') {
        true => ast::Ident::with_quote('"', name),
        false => ast::Ident::new(name),
    }
}

impl<'r> Renaming<'r> {
    fn read_written(&self, written: &str) -> Option<&'r ViewRead> {
        let cte = self.scopes.iter().any(|s| s.ctes.iter().any(|c| c == written));
        (!cte).then(|| self.reads.iter().find(|r| r.written == written)).flatten()
    }

    fn scope_of(&self, select: &ast::Select, ctes: Vec<String>) -> RenameScope<'r> {
        let mut items = Vec::new();
        let mut factors: Vec<&ast::TableFactor> = Vec::new();
        for from in &select.from {
            factors.push(&from.relation);
            factors.extend(from.joins.iter().map(|j| &j.relation));
        }
        for factor in factors {
            match factor {
                ast::TableFactor::Table { name, alias, .. } => {
                    let written = object_name(name).unwrap_or_default();
                    let cte = ctes.contains(&written);
                    let read = (!cte).then(|| self.read_written(&written)).flatten();
                    let qualifier = alias.as_ref().map_or(written, |a| ident_name(&a.name));
                    let renames_columns = alias.as_ref().is_some_and(|a| !a.columns.is_empty());
                    items.push((qualifier, read.filter(|_| !renames_columns)));
                }
                other => {
                    let alias = match other {
                        ast::TableFactor::Derived { alias, .. }
                        | ast::TableFactor::Function { alias, .. } => alias.as_ref(),
                        _ => None,
                    };
                    items.push((alias.map(|a| ident_name(&a.name)).unwrap_or_default(), None));
                }
            }
        }
        let outputs = select
            .projection
            .iter()
            .filter_map(|item| match item {
                ast::SelectItem::ExprWithAlias { alias, .. } => Some(ident_name(alias)),
                ast::SelectItem::UnnamedExpr(e) => Some(crate::sql::query::column_name(e)),
                _ => None,
            })
            .collect();
        RenameScope { items, outputs, in_tail: false, ctes }
    }

    /// The column's name now, for a name written unqualified: through the innermost
    /// SELECT whose FROM item read a column so written (a SELECT with a subquery or
    /// function in FROM ends the search: its columns are not known here).
    fn bare_column(&self, written: &str) -> Option<&'r str> {
        for scope in self.scopes.iter().rev() {
            if scope.in_tail && scope.outputs.iter().any(|o| o == written) {
                return None;
            }
            for (_, read) in &scope.items {
                if let Some(column) = read.and_then(|r| r.columns.iter().find(|c| c.written == written)) {
                    return Some(column.name.as_str());
                }
            }
            if scope.items.iter().any(|(_, read)| read.is_none()) {
                return None;
            }
        }
        None
    }

    /// The read of the FROM item the query qualifies columns by `qualifier`.
    fn qualified(&self, qualifier: &str) -> Option<&'r ViewRead> {
        self.scopes
            .iter()
            .rev()
            .find_map(|scope| scope.items.iter().find(|(q, _)| q == qualifier))
            .and_then(|(_, read)| *read)
    }

    /// A column reference's parts renamed: the column, and the qualifier when it is the
    /// relation's own name (no alias). Whether the last name, the one an output column
    /// is named after, changed.
    fn rename_reference(&self, parts: &mut [ast::Ident]) -> bool {
        let mut changed = false;
        match parts {
            [column] => match self.bare_column(&ident_name(column)) {
                Some(now) => {
                    changed = now != ident_name(column);
                    if changed {
                        *column = name_ident(now);
                    }
                }
                // No column so named: a FROM item's whole row (`SELECT t`, `(t).a`).
                None => {
                    let written = ident_name(column);
                    self.rename_qualifier(column);
                    changed = ident_name(column) != written;
                }
            },
            [.., qualifier, column] => {
                let Some(read) = self.qualified(&ident_name(qualifier)) else { return false };
                if let Some(c) = read.columns.iter().find(|c| c.written == ident_name(column)) {
                    if c.name != c.written {
                        *column = name_ident(&c.name);
                        changed = true;
                    }
                }
                if ident_name(qualifier) == read.written && read.relation != read.written {
                    *qualifier = name_ident(&read.relation);
                }
            }
            [] => {}
        }
        changed
    }

    /// A FROM item's name where its row or its columns are meant (`t`, `t.*`): the
    /// relation's name now when the item is the relation under its own name (no alias).
    fn rename_qualifier(&self, qualifier: &mut ast::Ident) {
        let written = ident_name(qualifier);
        if let Some(read) = self.qualified(&written) {
            if read.written == written && read.relation != written {
                *qualifier = name_ident(&read.relation);
            }
        }
    }

    fn rename_wildcard_qualifier(&self, name: &mut ast::ObjectName) {
        if let Some(ast::ObjectNamePart::Identifier(last)) = name.0.last_mut() {
            self.rename_qualifier(last);
        }
    }
}

impl<'r> ast::VisitorMut for Renaming<'r> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut ast::Query) -> std::ops::ControlFlow<()> {
        let ctes =
            query.with.iter().flat_map(|w| w.cte_tables.iter().map(|c| ident_name(&c.alias.name))).collect();
        // The query's own scope: its SELECT's, so that its ORDER BY resolves as there.
        let scope = match query.body.as_ref() {
            ast::SetExpr::Select(select) => self.scope_of(select, ctes),
            _ => RenameScope { items: Vec::new(), outputs: Vec::new(), in_tail: true, ctes },
        };
        self.scopes.push(scope);
        std::ops::ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut ast::Query) -> std::ops::ControlFlow<()> {
        self.scopes.pop();
        std::ops::ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &mut ast::Select) -> std::ops::ControlFlow<()> {
        let scope = self.scope_of(select, Vec::new());
        self.scopes.push(scope);
        // A renamed column alone in a select item keeps its output name as an alias.
        for item in &mut select.projection {
            if let ast::SelectItem::QualifiedWildcard(
                ast::SelectItemQualifiedWildcardKind::ObjectName(name),
                _,
            ) = item
            {
                self.rename_wildcard_qualifier(name);
            }
            let ast::SelectItem::UnnamedExpr(e) = item else { continue };
            let mut parts = match e {
                ast::Expr::Identifier(ident) => vec![ident.clone()],
                ast::Expr::CompoundIdentifier(parts) => parts.clone(),
                _ => continue,
            };
            let written = ident_name(parts.last().expect("a name"));
            if self.rename_reference(&mut parts) {
                *item = ast::SelectItem::ExprWithAlias { expr: e.clone(), alias: name_ident(&written) };
            }
        }
        std::ops::ControlFlow::Continue(())
    }

    fn post_visit_select(&mut self, _: &mut ast::Select) -> std::ops::ControlFlow<()> {
        self.scopes.pop();
        // What follows in the query around is its ORDER BY, LIMIT and the like.
        if let Some(query_scope) = self.scopes.last_mut() {
            query_scope.in_tail = true;
        }
        std::ops::ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut ast::TableFactor) -> std::ops::ControlFlow<()> {
        if let ast::TableFactor::Table { name, .. } = factor {
            let written = object_name(name).unwrap_or_default();
            if let Some(read) = self.read_written(&written).filter(|r| r.relation != r.written) {
                if let Some(last) = name.0.last_mut() {
                    *last = ast::ObjectNamePart::Identifier(name_ident(&read.relation));
                }
            }
        }
        std::ops::ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> std::ops::ControlFlow<()> {
        match expr {
            ast::Expr::Identifier(ident) => {
                let mut parts = [ident.clone()];
                self.rename_reference(&mut parts);
                *ident = parts[0].clone();
            }
            ast::Expr::CompoundIdentifier(parts) => {
                self.rename_reference(parts);
            }
            // `f(t.*)`: t's whole row.
            ast::Expr::Function(function) => {
                if let ast::FunctionArguments::List(list) = &mut function.args {
                    for arg in &mut list.args {
                        if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::QualifiedWildcard(name)) = arg
                        {
                            self.rename_wildcard_qualifier(name);
                        }
                    }
                }
            }
            ast::Expr::QualifiedWildcard(name, _) => self.rename_wildcard_qualifier(name),
            _ => {}
        }
        std::ops::ControlFlow::Continue(())
    }
}
