//! Joins: a FROM clause of several relations (comma-separated, `[INNER|LEFT|RIGHT|FULL]
//! JOIN ... ON/USING`, `NATURAL JOIN`, `CROSS JOIN`) planned into a tree of scans and
//! joins, and run.
//!
//! Rows: every relation in the FROM clause has its columns at an offset of one wide row
//! (`Scope`), so expressions compile once against the whole clause, and a partial row
//! (the relations joined so far) is a wide row with the other relations' columns NULL.
//!
//! Planning:
//! - The WHERE clause is split into its conjuncts. One that reads a single relation is
//!   pushed down into that relation's scan, where it also chooses the access path (point
//!   lookups, key ranges: `access`). One that reads several is applied at the first join
//!   where they are all present; `a = b` across the two sides of a join makes it a hash
//!   join (build on the new relation's rows, probe with the rows so far), or, when the
//!   new relation is a stored table whose primary key or a secondary index has a prefix
//!   pinned by such equalities and the rows so far are few (`choose_lookup`, the cost
//!   rule at `LOOKUP_COST_FULL_KEY`), an index nested loop: one lookup per row so far,
//!   through `access::KeyReader` (the statement's snapshot with the transaction's own
//!   changes). Inner and LEFT joins only; a RIGHT or FULL join must see every inner row.
//! - Join order, for inner joins (and comma joins): greedy by estimated rows. Start with
//!   the relation with the fewest, then add, of those joined to the set by an equality,
//!   the one with the fewest; a cross product only when nothing is joined. A relation's
//!   estimate is its row count, divided when conjuncts were pushed into its scan (to 1 for
//!   a point lookup). Outer joins keep the order written, and WHERE conjuncts are then
//!   applied after the whole FROM clause (a conjunct pushed below an outer join would
//!   change its result).
//!
//! Running:
//! - A hash join's table ([`JoinTable`]) holds the build rows' key values, evaluated once,
//!   and per hash a chain of row numbers; keys are hashed in place ([`HashForm`]: text
//!   borrowed, numbers that compare equal hashed alike) and every candidate is compared
//!   as SQL compares. An inner join builds on its smaller input; when its right side is a
//!   stored table expected to be larger than the rows so far, those rows are the build
//!   side and the table's rows probe as they are read, never held.
//! - The last join hands each row to the query as it is made (`visit_joins`); the inputs
//!   of a join are held whole.
//! - Only the columns the query reads are copied into the wide rows
//!   (`JoinPlan::needed`), so an unread text column costs no copy per joined row.

use sqlparser::ast;

use crate::database::Session;
use crate::error::{DbError, DbResult};
use crate::sql::access::{key_value, plan as plan_access, Access};
use std::sync::Arc;

use crate::schema::{Column, Row, TableSchema};
use crate::sql::expr::{compare, ident_name, BinOp, Expr, Num, Relation, Scope};
use crate::sql::srf::{FunctionScan, SetFunction};
use crate::value::{DataType, Value};

/// How two inputs are joined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
}

/// A planned FROM clause of several relations.
#[derive(Clone, Debug)]
pub(crate) struct JoinPlan {
    pub scope: Scope,
    pub root: Node,
    /// WHERE conjuncts applied to the joined rows (all of the WHERE when an outer join
    /// keeps it from being pushed down).
    pub residual: Option<Expr>,
    /// Some: the wide row's columns anything reads (the query around the joins, and the
    /// joins' own conditions); the others stay NULL in the joined rows, never copied.
    /// None: every column (see `SelectPlan::prune_join_columns`).
    pub needed: Option<Vec<bool>>,
}

#[derive(Clone, Debug)]
pub(crate) enum Node {
    /// The rows of scope entry `entry`, with `filter` (in the relation's own column
    /// numbering) choosing the access path and applied to each row.
    Scan { entry: usize, filter: Option<Expr>, access: Access, estimate: f64, rows: f64 },
    /// The rows of a set-returning function of scope entry `entry` (`srf`), with
    /// `filter` (in the function's own column numbering). A lateral call (its arguments
    /// read the relations before it) runs once per row of the join it is the right side
    /// of; any other once.
    Function { entry: usize, scan: FunctionScan, filter: Option<Expr> },
    Join {
        kind: JoinKind,
        left: Box<Node>,
        right: Box<Node>,
        /// `left_key[i] = right_key[i]`: a hash join on these (wide-row expressions).
        equi: Vec<(Expr, Expr)>,
        /// Applied to each joined pair (the ON condition's other parts, or the WHERE
        /// conjuncts that became complete here).
        condition: Option<Expr>,
        /// Some: an index nested loop (the right side, a scan of a stored table, is
        /// looked up by key for each left row) instead of a hash join.
        lookup: Option<Lookup>,
    },
}

/// The inner side of an index nested loop join: for each outer row, the rows of the right
/// scan's table whose first `outer.len()` columns of the primary key (`index` None) or of
/// secondary index `index` equal the values of `outer` on the outer row. The join's
/// `equi` still holds every equality (each is checked on the joined row: a lookup only
/// narrows), and the scan's filter applies to each row looked up.
#[derive(Clone, Debug)]
pub(crate) struct Lookup {
    pub index: Option<usize>,
    /// Per column of the key's prefix, in key order: its value, a wide-row expression
    /// of the outer row.
    pub outer: Vec<Expr>,
}

/// The cost rule choosing an index nested loop over a hash join, in units of one row of
/// a hash build (reading a row, hashing its key, storing it): the hash join reads every
/// row its right scan reads, the nested loop does one lookup per outer row. A lookup of a
/// whole primary key is one seek in one shard's tree; a prefix of the key, or a secondary
/// index (whose entries are spread over every shard, `state::SHARDS` = 16 seeks, then
/// the rows fetched and put in order), costs several. The nested loop runs when
/// `outer rows x LOOKUP_COST < rows the right scan reads`, with the rows estimated as
/// `scan_node` estimates them.
const LOOKUP_COST_FULL_KEY: f64 = 2.0;
const LOOKUP_COST_KEY_PREFIX: f64 = 4.0;
const LOOKUP_COST_SECONDARY: f64 = 16.0;

impl JoinPlan {
    /// Every expression of the plan.
    pub(crate) fn for_each_expr(&self, f: &mut dyn FnMut(&Expr)) {
        self.root.for_each_expr(f);
        self.residual.iter().for_each(f);
    }

    /// The plan with every expression replaced by `f` of it (a scan's access path chosen
    /// again: an outer row's values bound into its filter may make it a lookup).
    pub(crate) fn map_exprs(&self, f: &mut dyn FnMut(&Expr) -> DbResult<Expr>) -> DbResult<JoinPlan> {
        Ok(JoinPlan {
            scope: self.scope.clone(),
            root: self.root.map_exprs(&self.scope, f)?,
            residual: self.residual.as_ref().map(&mut *f).transpose()?,
            needed: self.needed.clone(),
        })
    }

    /// EXPLAIN's lines for the joins.
    pub(crate) fn explain(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.root.explain(&self.scope, 0, &mut out);
        out
    }
}

impl Node {
    fn for_each_expr(&self, f: &mut dyn FnMut(&Expr)) {
        match self {
            Node::Scan { filter, .. } => filter.iter().for_each(f),
            Node::Function { scan, filter, .. } => {
                scan.args.iter().for_each(&mut *f);
                filter.iter().for_each(f);
            }
            Node::Join { left, right, equi, condition, lookup, .. } => {
                left.for_each_expr(f);
                right.for_each_expr(f);
                for (a, b) in equi {
                    f(a);
                    f(b);
                }
                condition.iter().for_each(&mut *f);
                lookup.iter().flat_map(|l| &l.outer).for_each(f);
            }
        }
    }

    fn map_exprs(&self, scope: &Scope, f: &mut dyn FnMut(&Expr) -> DbResult<Expr>) -> DbResult<Node> {
        Ok(match self {
            Node::Scan { entry, filter, estimate, rows, .. } => {
                let filter = filter.as_ref().map(&mut *f).transpose()?;
                let access = plan_access(&scope.entries[*entry].relation.schema, filter.as_ref());
                Node::Scan { entry: *entry, filter, access, estimate: *estimate, rows: *rows }
            }
            Node::Function { entry, scan, filter } => Node::Function {
                entry: *entry,
                scan: scan.map_args(f)?,
                filter: filter.as_ref().map(&mut *f).transpose()?,
            },
            Node::Join { kind, left, right, equi, condition, lookup } => Node::Join {
                kind: *kind,
                left: Box::new(left.map_exprs(scope, f)?),
                right: Box::new(right.map_exprs(scope, f)?),
                equi: equi.iter().map(|(a, b)| Ok((f(a)?, f(b)?))).collect::<DbResult<_>>()?,
                condition: condition.as_ref().map(&mut *f).transpose()?,
                lookup: match lookup {
                    Some(l) => Some(Lookup {
                        index: l.index,
                        outer: l.outer.iter().map(&mut *f).collect::<DbResult<_>>()?,
                    }),
                    None => None,
                },
            },
        })
    }

    /// The scope entries under this node.
    fn entries(&self, out: &mut Vec<usize>) {
        match self {
            Node::Scan { entry, .. } | Node::Function { entry, .. } => out.push(*entry),
            Node::Join { left, right, .. } => {
                left.entries(out);
                right.entries(out);
            }
        }
    }

    /// EXPLAIN's lines for the node, indented by `depth`.
    pub(crate) fn explain(&self, scope: &Scope, depth: usize, out: &mut Vec<String>) {
        let pad = "  ".repeat(depth);
        match self {
            Node::Function { entry, scan, filter } => {
                let relation = &scope.entries[*entry].relation;
                let alias = match &relation.alias {
                    Some(a) if a != scan.explain_name() => format!(" {a}"),
                    _ => String::new(),
                };
                out.push(format!(
                    "{pad}-> Function Scan on {}{alias}{}",
                    scan.explain_name(),
                    if filter.is_some() { " (filtered)" } else { "" }
                ));
            }
            Node::Scan { entry, filter, .. } if scope.entries[*entry].lateral => {
                // PostgreSQL's node for a subquery it runs again for each outer row.
                let relation = &scope.entries[*entry].relation;
                out.push(format!(
                    "{pad}-> Subquery Scan on {}{}",
                    relation.reference_name(),
                    if filter.is_some() { " (filtered)" } else { "" }
                ));
            }
            Node::Scan { entry, access, filter, .. } => {
                let relation = &scope.entries[*entry].relation;
                let what = match access {
                    Access::Points(_) | Access::Index { .. } => "Index Scan using",
                    Access::Range { .. } => "Index Range Scan using",
                    Access::Empty => "Result (no rows) for",
                    Access::Full => "Seq Scan on",
                };
                let name = match access {
                    Access::Points(_) | Access::Range { .. } => {
                        format!("{} on {}", relation.schema.primary_key_name(), relation.name)
                    }
                    Access::Index { index, .. } => {
                        format!("{} on {}", relation.schema.indexes[*index].name, relation.name)
                    }
                    _ => relation.name.clone(),
                };
                let alias = match &relation.alias {
                    Some(a) if *a != relation.name => format!(" {a}"),
                    _ => String::new(),
                };
                out.push(format!(
                    "{pad}-> {what} {name}{alias}{}",
                    if filter.is_some() { " (filtered)" } else { "" }
                ));
            }
            Node::Join { kind, left, right, lookup: Some(lookup), condition, .. } => {
                // PostgreSQL's names: "Nested Loop" for an inner join, "Nested Loop Left Join".
                let kind = match kind {
                    JoinKind::Left => " Left Join",
                    _ => "",
                };
                let cond = if condition.is_some() { " (filtered)" } else { "" };
                out.push(format!("{pad}-> Nested Loop{kind}{cond}"));
                left.explain(scope, depth + 1, out);
                let Node::Scan { entry, filter, .. } = right.as_ref() else {
                    unreachable!("the inner side of an index nested loop is a table scan")
                };
                let relation = &scope.entries[*entry].relation;
                let (index_name, columns) = match lookup.index {
                    None => (relation.schema.primary_key_name(), &relation.schema.primary_key),
                    Some(i) => (relation.schema.indexes[i].name.clone(), &relation.schema.indexes[i].columns),
                };
                let alias = match &relation.alias {
                    Some(a) if *a != relation.name => format!(" {a}"),
                    _ => String::new(),
                };
                let inner_pad = "  ".repeat(depth + 1);
                out.push(format!(
                    "{inner_pad}-> Index Scan using {index_name} on {}{alias}{}",
                    relation.name,
                    if filter.is_some() { " (filtered)" } else { "" }
                ));
                let conditions: Vec<String> = columns
                    .iter()
                    .zip(&lookup.outer)
                    .map(|(&c, outer)| {
                        format!(
                            "{}.{} = {}",
                            relation.reference_name(),
                            relation.schema.columns[c].name,
                            expr_text(scope, outer)
                        )
                    })
                    .collect();
                out.push(format!("{inner_pad}     Index Cond: ({})", conditions.join(" AND ")));
            }
            Node::Join { kind, left, right, equi, condition, lookup: None } => {
                // A lateral right side runs for each left row: a nested loop, whatever
                // the equalities.
                let lateral_right = match right.as_ref() {
                    Node::Scan { entry, .. } => scope.entries[*entry].lateral,
                    Node::Function { scan, .. } => scan.is_lateral(),
                    Node::Join { .. } => false,
                };
                let hashed = !equi.is_empty() && !lateral_right;
                // PostgreSQL's names: "Hash Join", "Hash Left Join", "Nested Loop",
                // "Nested Loop Full Join", ...
                let name = match (hashed, kind) {
                    (true, JoinKind::Inner) => "Hash Join",
                    (true, JoinKind::Left) => "Hash Left Join",
                    (true, JoinKind::Right) => "Hash Right Join",
                    (true, JoinKind::Full) => "Hash Full Join",
                    (false, JoinKind::Inner) => "Nested Loop",
                    (false, JoinKind::Left) => "Nested Loop Left Join",
                    (false, JoinKind::Right) => "Nested Loop Right Join",
                    (false, JoinKind::Full) => "Nested Loop Full Join",
                };
                let cond = if condition.is_some() { " (filtered)" } else { "" };
                out.push(format!("{pad}-> {name}{cond}"));
                if hashed {
                    // PostgreSQL's line: each equality parenthesized, several ANDed.
                    let equalities: Vec<String> = equi
                        .iter()
                        .map(|(l, r)| format!("({} = {})", expr_text(scope, l), expr_text(scope, r)))
                        .collect();
                    let shown = match equalities.as_slice() {
                        [one] => one.clone(),
                        several => format!("({})", several.join(" AND ")),
                    };
                    out.push(format!("{pad}     Hash Cond: {shown}"));
                }
                left.explain(scope, depth + 1, out);
                right.explain(scope, depth + 1, out);
            }
        }
    }
}

/// One item of a FROM clause as written: a relation, or a join of two items.
enum Written {
    Relation(usize),
    Join {
        kind: JoinKind,
        left: Box<Written>,
        right: Box<Written>,
        on: Option<Box<ast::Expr>>,
        using: Vec<String>,
    },
}

impl Session {
    /// The scope of a FROM clause: its relations in the order written, and the clause as
    /// written (None for a single relation without joins: the caller's simple path).
    pub(crate) fn scope_of_from(
        &self,
        from: &[ast::TableWithJoins],
        params: &[Value],
        outer: &[Scope],
    ) -> DbResult<(Scope, Vec<WrittenItem>)> {
        let mut scope = Scope::default();
        let mut items = Vec::new();
        for item in from {
            let mut written = self.add_factor(&mut scope, &item.relation, params, outer)?;
            for join in &item.joins {
                let right = self.add_factor(&mut scope, &join.relation, params, outer)?;
                use ast::JoinOperator as J;
                let (kind, constraint) = match &join.join_operator {
                    J::Join(c) | J::Inner(c) => (JoinKind::Inner, Some(c)),
                    J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, Some(c)),
                    J::Right(c) | J::RightOuter(c) => (JoinKind::Right, Some(c)),
                    J::FullOuter(c) => (JoinKind::Full, Some(c)),
                    J::CrossJoin(_) => (JoinKind::Inner, None),
                    other => return Err(DbError::Unsupported(format!("the join {other:?}"))),
                };
                let (on, using) = match constraint {
                    None | Some(ast::JoinConstraint::None) => (None, Vec::new()),
                    Some(ast::JoinConstraint::On(e)) => (Some(Box::new(e.clone())), Vec::new()),
                    Some(ast::JoinConstraint::Using(columns)) => {
                        let names = columns
                            .iter()
                            .map(crate::sql::expr::object_name)
                            .collect::<DbResult<Vec<_>>>()?;
                        (None, names)
                    }
                    Some(ast::JoinConstraint::Natural) => {
                        let mut left_entries = Vec::new();
                        written.entries(&mut left_entries);
                        let right_relation = match &right {
                            Written::Relation(e) => &scope.entries[*e].relation,
                            Written::Join { .. } => unreachable!("a join's right side is one relation"),
                        };
                        let names = right_relation
                            .schema
                            .visible_columns()
                            .iter()
                            .map(|c| c.name.clone())
                            .filter(|n| {
                                left_entries
                                    .iter()
                                    .any(|&e| scope.entries[e].relation.schema.column_index(n).is_ok())
                            })
                            .collect();
                        (None, names)
                    }
                };
                if !using.is_empty() {
                    let mut left_entries = Vec::new();
                    written.entries(&mut left_entries);
                    let Written::Relation(right_entry) = right else { unreachable!() };
                    for name in &using {
                        let on_left: Vec<usize> = left_entries
                            .iter()
                            .copied()
                            .filter(|&e| scope.entries[e].relation.schema.column_index(name).is_ok())
                            .collect();
                        if on_left.len() != 1
                            || scope.entries[right_entry].relation.schema.column_index(name).is_err()
                        {
                            return Err(DbError::UnknownColumn(name.clone()));
                        }
                        let (keep, away) = if kind == JoinKind::Right {
                            (right_entry, on_left[0])
                        } else {
                            (on_left[0], right_entry)
                        };
                        scope.entries[keep].merged.push(name.clone());
                        scope.entries[away].merged_away.push(name.clone());
                    }
                }
                written = Written::Join { kind, left: Box::new(written), right: Box::new(right), on, using };
            }
            items.push(WrittenItem(written));
        }
        for (i, e) in scope.entries.iter().enumerate() {
            let name = e.relation.reference_name();
            if scope.entries[..i].iter().any(|o| o.relation.reference_name() == name) {
                return Err(DbError::DuplicateAlias(name.to_string()));
            }
        }
        Ok((scope, items))
    }

    fn add_factor(
        &self,
        scope: &mut Scope,
        factor: &ast::TableFactor,
        params: &[Value],
        outer: &[Scope],
    ) -> DbResult<Written> {
        let relation = match factor {
            ast::TableFactor::Table { name, alias, args: None, .. } => {
                self.relation_named(name, alias.as_ref())?
            }
            ast::TableFactor::Table { name, alias, args: Some(args), with_ordinality, .. } => {
                let args = plain_arguments(&args.args)?;
                self.function_relation(scope, name, &args, *with_ordinality, alias.as_ref(), params, outer)?
            }
            ast::TableFactor::Function { name, args, with_ordinality, alias, .. } => {
                let args = plain_arguments(args)?;
                self.function_relation(scope, name, &args, *with_ordinality, alias.as_ref(), params, outer)?
            }
            ast::TableFactor::UNNEST { alias, array_exprs, with_offset: false, with_ordinality, .. } => {
                let name = ast::ObjectName::from(vec![ast::Ident::new("unnest")]);
                let args: Vec<&ast::Expr> = array_exprs.iter().collect();
                self.function_relation(scope, &name, &args, *with_ordinality, alias.as_ref(), params, outer)?
            }
            ast::TableFactor::Derived { lateral, subquery, alias, .. } => {
                let Some(alias) = alias else {
                    return Err(DbError::Syntax {
                        message: "subquery in FROM must have an alias".into(),
                        position: 0,
                    });
                };
                let plan = if *lateral {
                    // Planned inside the relations before it: they are its outer row
                    // (depth 0), the queries around this one are one level further out.
                    let scopes: Vec<Scope> =
                        std::iter::once(scope.clone()).chain(outer.iter().cloned()).collect();
                    self.plan_query_in(subquery, params, &scopes)?
                } else {
                    // Planned in the scopes around this query, not beside the FROM
                    // clause's other relations (which only LATERAL may read).
                    self.plan_query_in(subquery, params, outer)
                        .map_err(|e| e.map_kind(|e| beyond_reach(e, scope)))?
                };
                let relation = derived_relation(ident_name(&alias.name), Some(alias), Arc::new(plan))?;
                scope.push(relation);
                scope.entries.last_mut().expect("just pushed").lateral = *lateral;
                return Ok(Written::Relation(scope.entries.len() - 1));
            }
            ast::TableFactor::NestedJoin { .. } => {
                return Err(DbError::Unsupported("a parenthesized join".into()))
            }
            other => return Err(DbError::Unsupported(format!("FROM {other}"))),
        };
        scope.push(relation);
        Ok(Written::Relation(scope.entries.len() - 1))
    }

    /// The relation of a set-returning function call in FROM: its arguments compiled
    /// against the relations before it (so that it may read them: LATERAL, implicit for
    /// a function as in PostgreSQL) and the scopes around the query.
    #[allow(clippy::too_many_arguments)]
    fn function_relation(
        &self,
        scope: &Scope,
        name: &ast::ObjectName,
        args: &[&ast::Expr],
        ordinality: bool,
        alias: Option<&ast::TableAlias>,
        params: &[Value],
        outer: &[Scope],
    ) -> DbResult<Relation> {
        let fname = crate::sql::expr::object_name(name)?;
        let fname = fname.strip_prefix("pg_catalog.").unwrap_or(&fname).to_string();
        let mut binder =
            crate::sql::expr::Binder::over(scope.clone(), outer.to_vec(), params).in_session(self);
        let types = scope.types();
        let mut call = |func: SetFunction, args: &[&ast::Expr], ordinality: bool| -> DbResult<FunctionScan> {
            let args =
                args.iter().map(|a| binder.scalar(a, "functions in FROM")).collect::<DbResult<Vec<_>>>()?;
            let arg_types: Vec<Option<DataType>> = args.iter().map(|a| a.static_type(&types, &[])).collect();
            FunctionScan::new(func, args, &arg_types, ordinality)
        };
        let scan = if fname == crate::sql::srf::ROWS_FROM {
            // Several calls of a select list, in lockstep (`srf::select_list_functions`).
            let mut parts = Vec::with_capacity(args.len());
            for a in args {
                let (func, call_args) = crate::sql::srf::call_of(a)
                    .ok_or_else(|| DbError::Unsupported(format!("{a} in ROWS FROM")))?;
                parts.push(call(func, &call_args.iter().collect::<Vec<_>>(), false)?.into_one_column());
            }
            FunctionScan::zip(parts, ordinality)
        } else {
            let Some(func) = SetFunction::named_in_schema(name) else {
                return Err(DbError::Unsupported(format!("the function {fname}() in FROM")));
            };
            call(func, args, ordinality)?
        };
        let mut names = scan.column_names();
        // unnest of several arrays: PostgreSQL names every column `unnest`; one name
        // each here (a relation's columns have distinct names), `unnest_2` and on.
        for i in 1..names.len() {
            if names[..i].contains(&names[i]) {
                names[i] = format!("{}_{}", names[i], i + 1);
            }
        }
        if let Some(alias) = alias {
            if alias.columns.len() > names.len() {
                return Err(DbError::Syntax {
                    message: format!(
                        "table \"{}\" has {} columns available but {} columns specified",
                        ident_name(&alias.name),
                        names.len(),
                        alias.columns.len()
                    ),
                    position: 0,
                });
            }
            if alias.columns.is_empty() && scan.types.len() == 1 {
                // `FROM generate_series(1, 3) AS n`: the one value column is `n` too.
                names[0] = ident_name(&alias.name);
            }
            for (slot, column) in names.iter_mut().zip(&alias.columns) {
                *slot = ident_name(&column.name);
            }
        }
        let columns = names
            .into_iter()
            .zip(scan.column_types())
            .map(|(name, ty)| Column { name, ty, nullable: true })
            .collect();
        let schema = Arc::new(TableSchema::new(&fname, columns, Vec::new())?);
        Ok(Relation {
            name: fname,
            alias: alias.map(|a| ident_name(&a.name)),
            schema,
            derived: None,
            function: Some(Arc::new(scan)),
        })
    }

    /// The table (or view of the database's state) `name`, as FROM names it.
    pub(crate) fn relation_named(
        &self,
        name: &ast::ObjectName,
        alias: Option<&ast::TableAlias>,
    ) -> DbResult<Relation> {
        let written = name;
        let name = crate::sql::expr::object_name(name)?;
        let cte = self.ctes.borrow().iter().rev().find(|(n, _)| *n == name).map(|(_, plan)| plan.clone());
        if let Some(cte) = cte {
            let Some(plan) = cte else {
                let start = sqlparser::ast::Spanned::span(written).start;
                return Err(DbError::FeatureNotSupported(format!(
                    "WITH query \"{name}\" does not have a RETURNING clause"
                ))
                .at(start.line, start.column));
            };
            if matches!(plan.as_ref(), crate::sql::query::QueryPlan::WorkTable(_)) {
                self.work_tables.note_read();
            }
            return derived_relation(name, alias, plan);
        }
        // In a view's query, a name it recorded means the object it meant when the view
        // was created, under whatever name that has now (`stored_views`).
        if let Some(read) = crate::sql::stored_views::bound_read(&name) {
            return self.bound_relation(written, alias, read);
        }
        if let Some(catalog) = crate::catalog::relation_named(written)? {
            // A catalog relation is known by its own name in the query (`tables`, not
            // `information_schema.tables`).
            let alias = match alias {
                None => Some(name.clone()).filter(|n| *n != catalog),
                Some(a) if a.columns.is_empty() => Some(ident_name(&a.name)),
                Some(_) => return Err(DbError::Unsupported("a column alias list on a table".into())),
            };
            let schema = crate::views::schema(&catalog).expect("a catalog relation has a schema");
            return Ok(Relation { name: catalog, alias, schema, derived: None, function: None });
        }
        // The session's temporary table of that name comes first (`temp_tables`).
        let stored = self.relation_name(written)?;
        let schema = match crate::views::schema(&stored) {
            Some(view) => view,
            None => self.db.read_catalog(|st| Ok::<_, DbError>(st.table(&stored)?.schema.clone())).map_err(
                |e| {
                    let start = sqlparser::ast::Spanned::span(written).start;
                    e.at(start.line, start.column)
                },
            )?,
        };
        if schema.view.is_some() {
            // A view: its query, planned here as a subquery in FROM.
            let plan = Arc::new(self.plan_view(&schema)?);
            crate::sql::stored_views::note_relation(&stored, Some(&plan));
            return view_relation(name, alias, plan, &schema);
        }
        crate::sql::stored_views::note_relation(&stored, None);
        let alias = match alias {
            // A temporary table answers to the name it was written with.
            None => Some(name).filter(|n| *n != stored),
            Some(a) if a.columns.is_empty() => Some(ident_name(&a.name)),
            Some(_) => return Err(DbError::Unsupported("a column alias list on a table".into())),
        };
        Ok(Relation { name: stored, alias, schema, derived: None, function: None })
    }

    /// The relation a view's query names `read.written`: `read.relation` now, known in
    /// the query by the written names (an unaliased one answers to the written name).
    fn bound_relation(
        &self,
        written: &ast::ObjectName,
        alias: Option<&ast::TableAlias>,
        read: crate::schema::ViewRead,
    ) -> DbResult<Relation> {
        let schema = self
            .db
            .read_catalog(|st| Ok::<_, DbError>(st.table(&read.relation)?.schema.clone()))
            .map_err(|e| {
                let start = sqlparser::ast::Spanned::span(written).start;
                e.at(start.line, start.column)
            })?;
        if schema.view.is_some() {
            let plan = Arc::new(self.plan_view(&schema)?);
            let mut relation = view_relation(read.written.clone(), alias, plan, &schema)?;
            relation.schema = crate::sql::stored_views::schema_as_written(relation.schema, &read);
            return Ok(relation);
        }
        let alias = match alias {
            None => Some(read.written.clone()).filter(|w| *w != read.relation),
            Some(a) if a.columns.is_empty() => Some(ident_name(&a.name)),
            Some(_) => return Err(DbError::Unsupported("a column alias list on a table".into())),
        };
        let schema = crate::sql::stored_views::schema_as_written(schema, &read);
        Ok(Relation { name: read.relation, alias, schema, derived: None, function: None })
    }

    /// Plans the joins of a FROM clause (`items` as `from_clause` returned them) with the
    /// WHERE clause `filter` (compiled against `scope`).
    pub(crate) fn plan_joins(
        &self,
        scope: Scope,
        items: Vec<WrittenItem>,
        filter: Option<Expr>,
        binder: &mut crate::sql::expr::Binder,
    ) -> DbResult<JoinPlan> {
        let mut conjuncts = Vec::new();
        if let Some(f) = filter {
            split_and(f, &mut conjuncts);
        }
        // A lateral function or subquery reads the relations before it: the clause is
        // run in the order written (as with outer joins), each lateral item the right
        // side of a join whose left side holds what it reads.
        let lateral = (0..scope.entries.len()).any(|e| !lateral_reads(&scope, e).is_empty());
        let has_outer = lateral || items.iter().any(|i| i.0.has_outer());
        // Inner joins: every ON condition is a WHERE conjunct like any other.
        let mut leaves: Vec<Node> = Vec::new();
        let mut written_nodes: Vec<Node> = Vec::new();
        if !has_outer {
            for item in &items {
                item.0.collect_inner(&scope, binder, &mut conjuncts)?;
            }
            let mut pushed: Vec<Vec<Expr>> = vec![Vec::new(); scope.entries.len()];
            let mut rest = Vec::new();
            for c in conjuncts {
                match single_entry(&scope, &c) {
                    Some(e) if !c.has_subquery() => pushed[e].push(shift(&c, scope.entries[e].offset)),
                    _ => rest.push(c),
                }
            }
            for (entry, filters) in pushed.into_iter().enumerate() {
                leaves.push(self.scan_node(&scope, entry, filters)?);
            }
            let root = order_inner(&scope, leaves, &mut rest);
            let residual = and_all(rest);
            return Ok(JoinPlan { scope, root, residual, needed: None });
        }
        if lateral {
            // Each FROM item joined onto the items before it, so that a lateral item in it
            // sees their rows (`written_node_after`).
            let mut root = None;
            for item in &items {
                root = Some(self.written_node_after(&scope, root, &item.0, binder)?);
            }
            let root = root.expect("a FROM clause of several relations");
            check_lateral_reads(&scope, &root)?;
            return Ok(JoinPlan { scope, root, residual: and_all(conjuncts), needed: None });
        }
        for item in &items {
            written_nodes.push(self.written_node(&scope, &item.0, binder)?);
        }
        let mut nodes = written_nodes.into_iter();
        let mut root = nodes.next().expect("a FROM clause of several relations");
        for next in nodes {
            root = Node::Join {
                kind: JoinKind::Inner,
                left: Box::new(root),
                right: Box::new(next),
                equi: Vec::new(),
                condition: None,
                lookup: None,
            };
        }
        Ok(JoinPlan { scope, root, residual: and_all(conjuncts), needed: None })
    }

    fn scan_node(&self, scope: &Scope, entry: usize, filters: Vec<Expr>) -> DbResult<Node> {
        let relation = &scope.entries[entry].relation;
        let filter = and_all(filters);
        if let Some(scan) = &relation.function {
            return Ok(Node::Function { entry, scan: FunctionScan::clone(scan), filter });
        }
        let access = plan_access(&relation.schema, filter.as_ref());
        let rows = if relation.derived.is_some() || crate::views::is_view(&relation.name) {
            100.0
        } else {
            // One shard's rows times the shards: keys spread evenly by their hash, and no
            // snapshot is taken to count them all.
            let in_one = self.db.read_catalog(|st| Ok::<_, DbError>(st.table(&relation.name)?.rows.len()))?;
            (in_one * crate::state::SHARDS) as f64
        };
        let estimate = match &access {
            Access::Empty => 0.0,
            Access::Points(keys) => keys.len() as f64,
            Access::Range { .. } => (rows / 4.0).max(1.0),
            Access::Index { within, .. } => match within.as_ref() {
                Access::Points(keys) => (keys.len() as f64 * 2.0).min(rows).max(1.0),
                _ => (rows / 4.0).max(1.0),
            },
            Access::Full if filter.is_some() => (rows / 3.0).max(1.0),
            Access::Full => rows.max(1.0),
        };
        Ok(Node::Scan { entry, filter, access, estimate, rows })
    }

    /// A FROM item with outer joins, in the order written.
    fn written_node(
        &self,
        scope: &Scope,
        written: &Written,
        binder: &mut crate::sql::expr::Binder,
    ) -> DbResult<Node> {
        match written {
            Written::Relation(entry) => self.scan_node(scope, *entry, Vec::new()),
            Written::Join { kind, left, right, on, using } => {
                let left_node = self.written_node(scope, left, binder)?;
                self.join_node(scope, left_node, (*kind, left, right, on.as_deref(), using), binder)
            }
        }
    }

    /// The FROM item `written` joined onto `before` (the items before it, if any) so
    /// that the item's first relation is joined to `before` first: `a, b LEFT JOIN c`
    /// runs as `(a CROSS JOIN b) LEFT JOIN c`, the same rows as `a CROSS JOIN (b LEFT
    /// JOIN c)` for inner and LEFT joins, and `c` (if lateral) sees the rows of `a`. A
    /// RIGHT or FULL join is not reassociated (it would add its unmatched right rows
    /// once per row of `before`): its item is joined to `before` whole.
    fn written_node_after(
        &self,
        scope: &Scope,
        before: Option<Node>,
        written: &Written,
        binder: &mut crate::sql::expr::Binder,
    ) -> DbResult<Node> {
        let cross = |left: Node, right: Node| Node::Join {
            kind: JoinKind::Inner,
            left: Box::new(left),
            right: Box::new(right),
            equi: Vec::new(),
            condition: None,
            lookup: None,
        };
        let Some(before) = before else { return self.written_node(scope, written, binder) };
        match written {
            Written::Join { kind: kind @ (JoinKind::Inner | JoinKind::Left), left, right, on, using } => {
                let left_node = self.written_node_after(scope, Some(before), left, binder)?;
                self.join_node(scope, left_node, (*kind, left, right, on.as_deref(), using), binder)
            }
            other => Ok(cross(before, self.written_node(scope, other, binder)?)),
        }
    }

    /// The join of `left_node` (the node of `left`) with `right` as written.
    fn join_node(
        &self,
        scope: &Scope,
        left_node: Node,
        (kind, left, right, on, using): (JoinKind, &Written, &Written, Option<&ast::Expr>, &[String]),
        binder: &mut crate::sql::expr::Binder,
    ) -> DbResult<Node> {
        let right_node = self.written_node(scope, right, binder)?;
        let mut conjuncts = Vec::new();
        if let Some(on) = on {
            split_and(binder.scalar(on, "JOIN/ON")?, &mut conjuncts);
        }
        // `ON true` (as `LEFT JOIN LATERAL ... ON true` writes it) holds for every pair.
        conjuncts.retain(|c| *c != Expr::Literal(Value::Bool(true)));
        conjuncts.extend(using_conditions(scope, left, right, using)?);
        let (mut l, mut r) = (Vec::new(), Vec::new());
        left_node.entries(&mut l);
        right_node.entries(&mut r);
        let (equi, rest) = split_equi(scope, conjuncts, &l, &r);
        let lookup = match kind {
            JoinKind::Inner | JoinKind::Left => {
                choose_lookup(scope, estimate(&left_node), &right_node, &equi)
            }
            JoinKind::Right | JoinKind::Full => None,
        };
        Ok(Node::Join {
            kind,
            left: Box::new(left_node),
            right: Box::new(right_node),
            equi,
            condition: and_all(rest),
            lookup,
        })
    }

    /// Runs a join plan: the joined wide rows, before the residual filter (which the
    /// caller applies with the rest of the query).
    pub(crate) fn run_joins(
        &self,
        plan: &JoinPlan,
        row_filter: &dyn Fn(&Expr, &[Value]) -> DbResult<bool>,
    ) -> DbResult<Vec<Vec<Value>>> {
        self.run_node(&plan.scope, plan.needed.as_deref(), &plan.root, row_filter)
    }

    /// Runs a join plan, handing each joined wide row (before the residual filter) to
    /// `visit` as it is made, until `visit` returns false: the last join's output is
    /// never held whole.
    pub(crate) fn visit_joins(
        &self,
        plan: &JoinPlan,
        row_filter: &dyn Fn(&Expr, &[Value]) -> DbResult<bool>,
        visit: &mut dyn FnMut(&[Value]) -> DbResult<bool>,
    ) -> DbResult<()> {
        let mut stopped = false;
        let (scope, needed) = (&plan.scope, plan.needed.as_deref());
        self.run_node_into(scope, needed, &plan.root, row_filter, &mut |row| {
            if !stopped {
                stopped = !visit(row)?;
            }
            Ok(())
        })
    }

    /// The rows of `node`, all of them (the inputs of a join).
    fn run_node(
        &self,
        scope: &Scope,
        needed: Option<&[bool]>,
        node: &Node,
        row_filter: &dyn Fn(&Expr, &[Value]) -> DbResult<bool>,
    ) -> DbResult<Vec<Vec<Value>>> {
        let mut out = Vec::new();
        self.run_node_into(scope, needed, node, row_filter, &mut |row| {
            out.push(std::mem::take(row));
            Ok(())
        })?;
        Ok(out)
    }

    /// The rows of `node`, each handed to `sink` as it is made.
    fn run_node_into(
        &self,
        scope: &Scope,
        needed: Option<&[bool]>,
        node: &Node,
        row_filter: &dyn Fn(&Expr, &[Value]) -> DbResult<bool>,
        sink: &mut RowSink,
    ) -> DbResult<()> {
        match node {
            Node::Function { entry, scan, filter } => {
                // Not lateral (a lateral one is run by its join): arguments of no row.
                let wide = vec![Value::Null; scope.width()];
                for mut row in self.function_rows(scope, *entry, scan, filter.as_ref(), &wide, row_filter)? {
                    sink(&mut row)?;
                }
                Ok(())
            }
            Node::Scan { entry, filter, access, .. } => {
                let e = &scope.entries[*entry];
                let width = scope.width();
                if let Some(plan) = &e.relation.derived {
                    for row in self.run_plan(plan)? {
                        if let Some(f) = filter {
                            if !row_filter(f, &row)? {
                                continue;
                            }
                        }
                        let mut wide = vec![Value::Null; width];
                        widen(&mut wide, e.offset, &row, needed);
                        sink(&mut wide)?;
                    }
                    return Ok(());
                }
                // One wide row for every row read, unless the sink takes it: each row
                // sets the same columns (the others stay NULL), so a streamed row costs
                // no allocation.
                let mut wide = Vec::new();
                self.visit_rows(&e.relation.name, access, &mut |row| {
                    if let Some(f) = filter {
                        if !row_filter(f, row)? {
                            return Ok(true);
                        }
                    }
                    if wide.len() != width {
                        wide = vec![Value::Null; width];
                    }
                    widen(&mut wide, e.offset, row, needed);
                    sink(&mut wide)?;
                    Ok(true)
                })?;
                Ok(())
            }
            Node::Join { kind, left, right, equi, condition, lookup } => {
                if builds_on_right(scope, *kind, left, right, equi, lookup.is_some()) {
                    return self.run_hash_join_probing_with_left(
                        scope,
                        needed,
                        *kind,
                        (left, right),
                        equi,
                        condition.as_ref(),
                        row_filter,
                        sink,
                    );
                }
                let left_rows = self.run_node(scope, needed, left, row_filter)?;
                if let Node::Scan { entry, filter, .. } = right.as_ref() {
                    // (A RIGHT or FULL join's lateral side reads nothing of its left
                    // side, `check_lateral_reads`: it is joined as any subquery.)
                    if scope.entries[*entry].lateral && matches!(kind, JoinKind::Inner | JoinKind::Left) {
                        return self.run_lateral_subquery(
                            scope,
                            needed,
                            *kind,
                            &left_rows,
                            (*entry, filter.as_ref()),
                            equi,
                            condition.as_ref(),
                            row_filter,
                            sink,
                        );
                    }
                }
                if let (Some(lookup), Node::Scan { entry, filter, .. }) = (lookup, right.as_ref()) {
                    return self.run_lookup_join(
                        scope,
                        needed,
                        *kind,
                        &left_rows,
                        (*entry, filter.as_ref(), lookup),
                        equi,
                        condition.as_ref(),
                        row_filter,
                        sink,
                    );
                }
                if let Node::Function { entry, scan, filter } = right.as_ref() {
                    if scan.is_lateral() {
                        return self.run_lateral(
                            scope,
                            *kind,
                            &left_rows,
                            (*entry, scan, filter.as_ref()),
                            equi,
                            condition.as_ref(),
                            row_filter,
                            sink,
                        );
                    }
                }
                let mut r = Vec::new();
                right.entries(&mut r);
                let right_slots: Vec<(usize, usize)> = r.iter().map(|&e| slot(scope, e)).collect();
                // A joined row: the left row with the right side's slots of `b`, made in
                // `row` (reused while the sink leaves it, see `RowSink`).
                let combine = |row: &mut Vec<Value>, a: &[Value], b: &[Value]| {
                    if row.len() == a.len() {
                        row.clone_from_slice(a);
                    } else {
                        *row = a.to_vec();
                    }
                    for &(from, to) in &right_slots {
                        row[from..to].clone_from_slice(&b[from..to]);
                    }
                };
                let mut row = Vec::new();
                let passes = |row: &[Value]| condition.as_ref().map_or(Ok(true), |c| row_filter(c, row));
                let left_keys: Vec<&Expr> = equi.iter().map(|(lk, _)| lk).collect();
                let right_keys: Vec<&Expr> = equi.iter().map(|(_, rk)| rk).collect();
                // An inner equality join whose right side is a stored table expected to
                // hold more rows than the rows so far: the hash table is built on those
                // rows, and the table's rows probe it as they are read, never held.
                if let Node::Scan { entry, filter, access, estimate: right_estimate, .. } = right.as_ref() {
                    let relation = &scope.entries[*entry].relation;
                    if *kind == JoinKind::Inner
                        && !equi.is_empty()
                        && relation.derived.is_none()
                        && *right_estimate > left_rows.len() as f64
                    {
                        let from = scope.entries[*entry].offset;
                        let mut wide = vec![Value::Null; scope.width()];
                        let mut joined = Vec::new();
                        let mut probe_with = |table: &JoinTable, combine_at: &CombineAt| -> DbResult<()> {
                            self.visit_rows(&relation.name, access, &mut |row| {
                                if let Some(f) = filter {
                                    if !row_filter(f, row)? {
                                        return Ok(true);
                                    }
                                }
                                widen(&mut wide, from, row, needed);
                                let (probe, Some(hash)) = probe_key(&right_keys, &wide)? else {
                                    return Ok(true);
                                };
                                for i in table.candidates(hash) {
                                    if table.equals(i, &probe)? {
                                        combine_at(&mut joined, i, &wide);
                                        if passes(&joined)? {
                                            sink(&mut joined)?;
                                        }
                                    }
                                }
                                Ok(true)
                            })
                        };
                        // Packed when every key is a column of the left rows (the usual
                        // join on keys), else the wide rows as they are.
                        match key_columns(&left_keys) {
                            Some(key_columns) => {
                                let packed = PackedRows::of(scope, needed, left, &key_columns, left_rows);
                                let table = JoinTable::build(&packed.keys(), BuildRows::Packed(&packed))?;
                                probe_with(&table, &|joined, i, probe| packed.combine(joined, i, probe))?;
                            }
                            None => {
                                let table = JoinTable::build(&left_keys, BuildRows::Wide(&left_rows))?;
                                probe_with(&table, &|joined, i, probe| {
                                    combine(joined, &left_rows[i], probe)
                                })?;
                            }
                        }
                        return Ok(());
                    }
                }
                let right_rows = self.run_node(scope, needed, right, row_filter)?;
                let mut right_matched = vec![false; right_rows.len()];
                if equi.is_empty() {
                    // No equality: every pair is a candidate.
                    for a in &left_rows {
                        let mut matched = false;
                        for (i, b) in right_rows.iter().enumerate() {
                            combine(&mut row, a, b);
                            if passes(&row)? {
                                matched = true;
                                right_matched[i] = true;
                                sink(&mut row)?;
                            }
                        }
                        if !matched && matches!(kind, JoinKind::Left | JoinKind::Full) {
                            sink(&mut a.clone())?;
                        }
                    }
                } else if *kind == JoinKind::Inner && left_rows.len() < right_rows.len() {
                    // An inner join builds on the smaller input: here the left rows, probed
                    // by each right row in turn (the output in the right rows' order).
                    let table = JoinTable::build(&left_keys, BuildRows::Wide(&left_rows))?;
                    for b in &right_rows {
                        let (probe, Some(hash)) = probe_key(&right_keys, b)? else { continue };
                        for i in table.candidates(hash) {
                            if table.equals(i, &probe)? {
                                combine(&mut row, &left_rows[i], b);
                                if passes(&row)? {
                                    sink(&mut row)?;
                                }
                            }
                        }
                    }
                } else {
                    let table = JoinTable::build(&right_keys, BuildRows::Wide(&right_rows))?;
                    for a in &left_rows {
                        let mut matched = false;
                        if let (probe, Some(hash)) = probe_key(&left_keys, a)? {
                            for i in table.candidates(hash) {
                                if table.equals(i, &probe)? {
                                    combine(&mut row, a, &right_rows[i]);
                                    if passes(&row)? {
                                        matched = true;
                                        right_matched[i] = true;
                                        sink(&mut row)?;
                                    }
                                }
                            }
                        }
                        if !matched && matches!(kind, JoinKind::Left | JoinKind::Full) {
                            sink(&mut a.clone())?;
                        }
                    }
                }
                if matches!(kind, JoinKind::Right | JoinKind::Full) {
                    let width = scope.width();
                    for (i, b) in right_rows.iter().enumerate() {
                        if !right_matched[i] {
                            let mut row = vec![Value::Null; width];
                            for &(from, to) in &right_slots {
                                row[from..to].clone_from_slice(&b[from..to]);
                            }
                            sink(&mut row)?;
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

impl Session {
    /// A hash join built on its right side, the left side's rows probing it as they are
    /// made: no left row is held, so a chain of such joins (a left-deep tree, as
    /// `order_inner` builds) runs as one pipeline, each base row passing through every
    /// join's table before the next is read. The right rows are packed ([`PackedRows`]).
    ///
    /// A left row's last match is made in the left row itself (its right side's slots
    /// written, then handed on): the usual join on a key matches once, and copies no
    /// row. Those slots may hold a previous row's values, which every match overwrites; a
    /// LEFT join's unmatched row has them set to NULL first.
    #[allow(clippy::too_many_arguments)]
    fn run_hash_join_probing_with_left(
        &self,
        scope: &Scope,
        needed: Option<&[bool]>,
        kind: JoinKind,
        (left, right): (&Node, &Node),
        equi: &[(Expr, Expr)],
        condition: Option<&Expr>,
        row_filter: &dyn Fn(&Expr, &[Value]) -> DbResult<bool>,
        sink: &mut RowSink,
    ) -> DbResult<()> {
        let left_keys: Vec<&Expr> = equi.iter().map(|(lk, _)| lk).collect();
        let right_keys: Vec<&Expr> = equi.iter().map(|(_, rk)| rk).collect();
        let key_columns =
            key_columns(&right_keys).expect("builds_on_right checked the right keys are columns");
        let packed = self.packed_rows_of(scope, needed, right, &key_columns, row_filter)?;
        let table = JoinTable::build(&packed.keys(), BuildRows::Packed(&packed))?;
        let mut right_matched =
            vec![false; if matches!(kind, JoinKind::Right | JoinKind::Full) { packed.len() } else { 0 }];
        let passes = |row: &[Value]| condition.map_or(Ok(true), |c| row_filter(c, row));
        let mut joined = Vec::new();
        self.run_node_into(scope, needed, left, row_filter, &mut |a| {
            let mut matched = false;
            // The match before the one being looked at: made in a copy of `a` once another
            // follows it, in `a` itself if it is the last.
            let mut pending: Option<usize> = None;
            if let (probe, Some(hash)) = probe_key(&left_keys, a)? {
                for i in table.candidates(hash) {
                    if table.equals(i, &probe)? {
                        if let Some(before) = pending.replace(i) {
                            packed.combine(&mut joined, before, a);
                            if passes(&joined)? {
                                matched = true;
                                if let Some(m) = right_matched.get_mut(before) {
                                    *m = true;
                                }
                                sink(&mut joined)?;
                            }
                        }
                    }
                }
            }
            if let Some(last) = pending {
                packed.write_into(a, last);
                if passes(a)? {
                    if let Some(m) = right_matched.get_mut(last) {
                        *m = true;
                    }
                    return sink(a);
                }
            }
            if !matched && matches!(kind, JoinKind::Left | JoinKind::Full) {
                packed.clear_in(a);
                sink(a)?;
            }
            Ok(())
        })?;
        if matches!(kind, JoinKind::Right | JoinKind::Full) {
            let nulls = vec![Value::Null; scope.width()];
            for (i, _) in right_matched.iter().enumerate().filter(|(_, m)| !**m) {
                packed.combine(&mut joined, i, &nulls);
                sink(&mut joined)?;
            }
        }
        Ok(())
    }

    /// The rows of `node` packed for a hash join on its columns `keys`: a stored table's
    /// rows packed as they are read (no wide row made), any other node's from its wide rows.
    fn packed_rows_of(
        &self,
        scope: &Scope,
        needed: Option<&[bool]>,
        node: &Node,
        keys: &[usize],
        row_filter: &dyn Fn(&Expr, &[Value]) -> DbResult<bool>,
    ) -> DbResult<PackedRows> {
        if let Node::Scan { entry, filter, access, estimate, .. } = node {
            let e = &scope.entries[*entry];
            if e.relation.derived.is_none() {
                let mut packed = PackedRows::empty(scope, needed, node, keys);
                // (An estimate above the table's rows is cut to them: `scan_node`'s.)
                packed.values.reserve(*estimate as usize * packed.columns.len());
                let own: Vec<usize> = packed.columns.iter().map(|c| c - e.offset).collect();
                self.visit_rows(&e.relation.name, access, &mut |row| {
                    if let Some(f) = filter {
                        if !row_filter(f, row)? {
                            return Ok(true);
                        }
                    }
                    packed.values.extend(own.iter().map(|&c| row[c].clone()));
                    packed.rows += 1;
                    Ok(true)
                })?;
                return Ok(packed);
            }
        }
        let rows = self.run_node(scope, needed, node, row_filter)?;
        Ok(PackedRows::of(scope, needed, node, keys, rows))
    }

    /// The rows of function `scan` of scope entry `entry`, its arguments evaluated on
    /// the wide row `outer` (the row so far, for a lateral call), each as a wide row:
    /// `outer` with the function's columns set.
    fn function_rows(
        &self,
        scope: &Scope,
        entry: usize,
        scan: &FunctionScan,
        filter: Option<&Expr>,
        outer: &[Value],
        row_filter: &dyn Fn(&Expr, &[Value]) -> DbResult<bool>,
    ) -> DbResult<Vec<Vec<Value>>> {
        let e = &scope.entries[entry];
        let n = e.relation.schema.columns.len();
        let mut out = Vec::new();
        for row in scan.rows(outer)? {
            let mut wide = outer.to_vec();
            wide[e.offset..e.offset + row.len()].clone_from_slice(&row);
            if let Some(f) = filter {
                if !row_filter(f, &wide[e.offset..e.offset + n])? {
                    continue;
                }
            }
            out.push(wide);
        }
        Ok(out)
    }

    /// An index nested loop join (see [`Lookup`]): for each left row, the rows of the
    /// right table its key values look up, each checked against the right scan's filter,
    /// every equality and the join's condition; a LEFT join keeps a left row that finds
    /// nothing, NULLs on the right.
    #[allow(clippy::too_many_arguments)]
    fn run_lookup_join(
        &self,
        scope: &Scope,
        needed: Option<&[bool]>,
        kind: JoinKind,
        left_rows: &[Vec<Value>],
        (entry, filter, lookup): (usize, Option<&Expr>, &Lookup),
        equi: &[(Expr, Expr)],
        condition: Option<&Expr>,
        row_filter: &dyn Fn(&Expr, &[Value]) -> DbResult<bool>,
        sink: &mut RowSink,
    ) -> DbResult<()> {
        assert!(matches!(kind, JoinKind::Inner | JoinKind::Left), "a nested loop of a {kind:?} join");
        let e = &scope.entries[entry];
        let reader = self.key_reader(&e.relation.name, lookup.index)?;
        let schema = &e.relation.schema;
        let columns = match lookup.index {
            None => &schema.primary_key,
            Some(i) => &schema.indexes[i].columns,
        };
        let from = scope.entries[entry].offset;
        let mut prefix = Vec::with_capacity(lookup.outer.len());
        for (n, a) in left_rows.iter().enumerate() {
            if n % crate::database::CANCEL_CHECK_ROWS as usize == 0 {
                self.check_cancel()?;
            }
            prefix.clear();
            // Some(prefix) to look up, None when no row can match (a NULL key).
            let mut matchable = true;
            let mut by_lookup = true;
            for (expr, &column) in lookup.outer.iter().zip(columns) {
                match key_value(&expr.eval(a, &[])?, schema.columns[column].ty) {
                    Ok(Some(v)) => prefix.push(v),
                    Ok(None) => matchable = false,
                    Err(()) => by_lookup = false,
                }
            }
            let mut matched = false;
            let mut try_row = |row: &Row| -> DbResult<()> {
                if let Some(f) = filter {
                    if !row_filter(f, row)? {
                        return Ok(());
                    }
                }
                let mut joined = a.clone();
                widen(&mut joined, from, row, needed);
                if !equal_on(equi, &joined)? {
                    return Ok(());
                }
                if let Some(c) = condition {
                    if !row_filter(c, &joined)? {
                        return Ok(());
                    }
                }
                matched = true;
                sink(&mut joined)?;
                Ok(())
            };
            if !matchable {
                // A NULL (or a value no key equals) matches nothing.
            } else if by_lookup {
                reader.lookup(&prefix, &mut try_row)?;
            } else {
                // A value the key's order cannot find (compared in another type's
                // order): every row, each checked.
                self.visit_rows(&e.relation.name, &Access::Full, &mut |row| {
                    try_row(row)?;
                    Ok(true)
                })?;
            }
            if !matched && kind == JoinKind::Left {
                sink(&mut a.clone())?;
            }
        }
        Ok(())
    }

    /// A join whose right side is a lateral function: the function run for each left
    /// row (a LEFT join keeps a left row it gives nothing for).
    #[allow(clippy::too_many_arguments)]
    fn run_lateral(
        &self,
        scope: &Scope,
        kind: JoinKind,
        left_rows: &[Vec<Value>],
        (entry, scan, filter): (usize, &FunctionScan, Option<&Expr>),
        equi: &[(Expr, Expr)],
        condition: Option<&Expr>,
        row_filter: &dyn Fn(&Expr, &[Value]) -> DbResult<bool>,
        sink: &mut RowSink,
    ) -> DbResult<()> {
        if matches!(kind, JoinKind::Right | JoinKind::Full) {
            return Err(DbError::Unsupported("a RIGHT or FULL join with a lateral function".into()));
        }
        for a in left_rows {
            let mut matched = false;
            for mut row in self.function_rows(scope, entry, scan, filter, a, row_filter)? {
                if !equal_on(equi, &row)? {
                    continue;
                }
                if let Some(c) = condition {
                    if !row_filter(c, &row)? {
                        continue;
                    }
                }
                matched = true;
                sink(&mut row)?;
            }
            if !matched && kind == JoinKind::Left {
                sink(&mut a.clone())?;
            }
        }
        Ok(())
    }
}

/// The columns of the FROM clause's row that scope entry `entry` reads to make its
/// rows: a LATERAL subquery's outer references at depth 0, a set-returning function's
/// arguments; none for anything else (which can be run apart from the other items).
fn lateral_reads(scope: &Scope, entry: usize) -> Vec<usize> {
    let e = &scope.entries[entry];
    let mut columns = Vec::new();
    if let (true, Some(plan)) = (e.lateral, &e.relation.derived) {
        plan.outer_columns(0, &mut columns);
    }
    if let Some(scan) = &e.relation.function {
        scan.args.iter().for_each(|a| a.columns(&mut columns));
    }
    columns
}

/// The scope entry whose columns hold wide-row column `column`.
fn entry_of_column(scope: &Scope, column: usize) -> usize {
    scope.entries.iter().rposition(|e| e.offset <= column).expect("a column of the scope")
}

/// Checks that each lateral item of the plan is the right side of an inner or LEFT join
/// whose left side holds every relation it reads, which is what running it once per left
/// row needs. A lateral item reading the left side of a RIGHT or FULL join is
/// PostgreSQL's 42P10; reading across one (a comma item before a RIGHT or FULL join) is
/// not supported here.
fn check_lateral_reads(scope: &Scope, node: &Node) -> DbResult<()> {
    let across = || DbError::Unsupported("a LATERAL reference across a RIGHT or FULL join".into());
    match node {
        Node::Scan { entry, .. } | Node::Function { entry, .. } => {
            if lateral_reads(scope, *entry).is_empty() {
                Ok(())
            } else {
                Err(across())
            }
        }
        Node::Join { kind, left, right, .. } => {
            check_lateral_reads(scope, left)?;
            let (Node::Scan { entry, .. } | Node::Function { entry, .. }) = right.as_ref() else {
                return check_lateral_reads(scope, right);
            };
            let mut on_left = Vec::new();
            left.entries(&mut on_left);
            for column in lateral_reads(scope, *entry) {
                let read = entry_of_column(scope, column);
                let inside = on_left.contains(&read);
                if matches!(kind, JoinKind::Right | JoinKind::Full) && inside {
                    let name = scope.entries[read].relation.reference_name().to_string();
                    return Err(DbError::LateralAcrossOuterJoin(name));
                }
                if !inside || matches!(kind, JoinKind::Right | JoinKind::Full) {
                    return Err(across());
                }
            }
            Ok(())
        }
    }
}

/// The error of a subquery in FROM without LATERAL that names a relation before it in
/// the FROM clause (`scope`): PostgreSQL's, which says the relation is there but out of
/// reach, rather than missing. Any other error as it is.
fn beyond_reach(error: DbError, scope: &Scope) -> DbError {
    match error {
        DbError::MissingFromEntry(table) if scope.entry_named(&table).is_some() => {
            let hint =
                format!("There is an entry for table \"{table}\", but it cannot be referenced from this part of the query.");
            DbError::InvalidFromReference { table, hint }
        }
        DbError::UnknownColumn(column) => {
            let holder = scope.entries.iter().find(|e| {
                e.relation.schema.visible_columns().iter().any(|c| c.name == column)
                    && !e.merged_away.contains(&column)
            });
            match holder {
                Some(entry) => {
                    let hint = format!(
                        "There is a column named \"{column}\" in table \"{}\", but it cannot be referenced from this part of the query.",
                        entry.relation.reference_name()
                    );
                    DbError::UnreachableColumn { column, hint }
                }
                None => DbError::UnknownColumn(column),
            }
        }
        other => other,
    }
}

impl Session {
    /// A join whose right side is a LATERAL subquery (a nested loop): for each left row,
    /// the subquery's plan with that row bound as its outer row, run, each of its rows
    /// checked against the scan's filter, the equalities and the join's condition; a
    /// LEFT join keeps a left row that finds nothing, NULLs on the right. A subquery that
    /// reads no column of the left rows runs once (PostgreSQL would not rescan it
    /// either).
    #[allow(clippy::too_many_arguments)]
    fn run_lateral_subquery(
        &self,
        scope: &Scope,
        needed: Option<&[bool]>,
        kind: JoinKind,
        left_rows: &[Vec<Value>],
        (entry, filter): (usize, Option<&Expr>),
        equi: &[(Expr, Expr)],
        condition: Option<&Expr>,
        row_filter: &dyn Fn(&Expr, &[Value]) -> DbResult<bool>,
        sink: &mut RowSink,
    ) -> DbResult<()> {
        assert!(matches!(kind, JoinKind::Inner | JoinKind::Left), "a lateral subquery in a {kind:?} join");
        let e = &scope.entries[entry];
        let plan = e.relation.derived.as_deref().expect("a lateral entry is a subquery");
        let uncorrelated = if plan.reads_outer(0) { None } else { Some(self.run_plan(plan)?) };
        for (n, a) in left_rows.iter().enumerate() {
            if n % crate::database::CANCEL_CHECK_ROWS as usize == 0 {
                self.check_cancel()?;
            }
            let bound;
            let rows = match &uncorrelated {
                Some(rows) => rows,
                None => {
                    bound = self.run_plan(&plan.bind_outer(0, a))?;
                    &bound
                }
            };
            let mut matched = false;
            for row in rows {
                if let Some(f) = filter {
                    if !row_filter(f, row)? {
                        continue;
                    }
                }
                let mut joined = a.clone();
                widen(&mut joined, e.offset, row, needed);
                if !equal_on(equi, &joined)? {
                    continue;
                }
                if let Some(c) = condition {
                    if !row_filter(c, &joined)? {
                        continue;
                    }
                }
                matched = true;
                sink(&mut joined)?;
            }
            if !matched && kind == JoinKind::Left {
                sink(&mut a.clone())?;
            }
        }
        Ok(())
    }
}

/// A table function's arguments, each a plain expression.
fn plain_arguments(args: &[ast::FunctionArg]) -> DbResult<Vec<&ast::Expr>> {
    args.iter()
        .map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e),
            other => Err(DbError::Unsupported(format!("the argument {other} of a function in FROM"))),
        })
        .collect()
}

/// The relation of a subquery in FROM or of a WITH query named `name`: its result columns
/// (renamed by the alias's column list, if it has one) as a table's.
/// A view in FROM: its query's rows, under the view's own column names (which a RENAME
/// COLUMN of the view changes, not its query's text) unless the FROM item renames them.
fn view_relation(
    name: String,
    alias: Option<&ast::TableAlias>,
    plan: Arc<crate::sql::query::QueryPlan>,
    view: &TableSchema,
) -> DbResult<Relation> {
    let mut relation = derived_relation(name, alias, plan)?;
    let renamed_by_alias = alias.map_or(0, |a| a.columns.len());
    let differs = |(i, c): (usize, &Column)| relation.schema.columns.get(i).is_some_and(|d| d.name != c.name);
    if view.visible_columns().iter().enumerate().skip(renamed_by_alias).any(differs) {
        let mut schema = TableSchema::clone(&relation.schema);
        let visible = schema.visible_columns().len();
        for (i, column) in view.visible_columns().iter().enumerate().skip(renamed_by_alias) {
            if i < visible {
                schema.columns[i].name = column.name.clone();
            }
        }
        relation.schema = Arc::new(schema);
    }
    // Its row is of the type named after the view (`pg_typeof(v)` of a whole row).
    Arc::make_mut(&mut relation.schema).view = view.view.clone();
    Ok(relation)
}

pub(crate) fn derived_relation(
    name: String,
    alias: Option<&ast::TableAlias>,
    plan: Arc<crate::sql::query::QueryPlan>,
) -> DbResult<Relation> {
    let mut names: Vec<String> = plan.columns().iter().map(|c| c.name.clone()).collect();
    if let Some(alias) = alias {
        if alias.columns.len() > names.len() {
            return Err(DbError::Syntax {
                message: format!(
                    "table \"{name}\" has {} columns available but {} columns specified",
                    names.len(),
                    alias.columns.len()
                ),
                position: 0,
            });
        }
        for (slot, column) in names.iter_mut().zip(&alias.columns) {
            *slot = ident_name(&column.name);
        }
    }
    let columns = names
        .into_iter()
        .zip(plan.columns())
        .map(|(name, c)| Column {
            name,
            ty: c.ty.unwrap_or(DataType::Text { max_chars: None }),
            nullable: true,
        })
        .collect();
    let schema = Arc::new(TableSchema::new(&name, columns, Vec::new())?);
    let alias = alias.map(|a| ident_name(&a.name));
    Ok(Relation { name, alias, schema, derived: Some(plan), function: None })
}

/// A FROM item as written (a relation, or joins of them).
pub(crate) struct WrittenItem(Written);

impl Written {
    fn entries(&self, out: &mut Vec<usize>) {
        match self {
            Written::Relation(e) => out.push(*e),
            Written::Join { left, right, .. } => {
                left.entries(out);
                right.entries(out);
            }
        }
    }

    fn has_outer(&self) -> bool {
        match self {
            Written::Relation(_) => false,
            Written::Join { kind, left, right, .. } => {
                *kind != JoinKind::Inner || left.has_outer() || right.has_outer()
            }
        }
    }

    /// The ON and USING conditions of inner joins, as conjuncts.
    fn collect_inner(
        &self,
        scope: &Scope,
        binder: &mut crate::sql::expr::Binder,
        out: &mut Vec<Expr>,
    ) -> DbResult<()> {
        if let Written::Join { left, right, on, using, .. } = self {
            left.collect_inner(scope, binder, out)?;
            right.collect_inner(scope, binder, out)?;
            if let Some(on) = on {
                split_and(binder.scalar(on, "JOIN/ON")?, out);
            }
            out.extend(using_conditions(scope, left, right, using)?);
        }
        Ok(())
    }
}

/// `left.c = right.c` for each column `c` of a USING list.
fn using_conditions(scope: &Scope, left: &Written, right: &Written, using: &[String]) -> DbResult<Vec<Expr>> {
    let (mut l, mut r) = (Vec::new(), Vec::new());
    left.entries(&mut l);
    right.entries(&mut r);
    let position = |entries: &[usize], name: &str| {
        entries.iter().find_map(|&e| {
            let entry = &scope.entries[e];
            let i = entry.relation.schema.column_index(name).ok()?;
            crate::sql::stored_views::note_column(&entry.relation, name);
            Some(entry.offset + i)
        })
    };
    using
        .iter()
        .map(|name| match (position(&l, name), position(&r, name)) {
            (Some(a), Some(b)) => {
                Ok(Expr::Binary(BinOp::Eq, Box::new(Expr::Column(a)), Box::new(Expr::Column(b))))
            }
            _ => Err(DbError::UnknownColumn(name.clone())),
        })
        .collect()
}

/// Where a join node hands its rows, one at a time, each a wide row: the sink may take
/// the row (`std::mem::take`, as a join's input collecting its rows does) or only read it
/// (the last join streaming into the query), and the node may reuse what it leaves for
/// its next row (a row's memory, its text values' too, filled again in place).
pub(crate) type RowSink<'s> = dyn FnMut(&mut Vec<Value>) -> DbResult<()> + 's;

/// Makes in `joined` (its first argument) the joined row of build row `i` (its second)
/// and a probing wide row (its third), for a hash join whose probing rows stream.
type CombineAt<'c> = dyn Fn(&mut Vec<Value>, usize, &[Value]) + 'c;

/// Copies a relation's own `row` into the wide row at `offset`: every column, or with
/// `needed` (see `JoinPlan::needed`) only those something reads.
fn widen(wide: &mut [Value], offset: usize, row: &[Value], needed: Option<&[bool]>) {
    match needed {
        None => wide[offset..offset + row.len()].clone_from_slice(row),
        Some(needed) => {
            for (i, v) in row.iter().enumerate() {
                if needed[offset + i] {
                    wide[offset + i].clone_from(v);
                }
            }
        }
    }
}

/// The slice of a wide row that scope entry `e` occupies.
fn slot(scope: &Scope, e: usize) -> (usize, usize) {
    let entry = &scope.entries[e];
    (entry.offset, entry.offset + entry.relation.schema.columns.len())
}

/// A value in the form a hash join hashes it: numbers that compare equal hash equal (an
/// integral float or numeric as the integer, a fraction as its float; a NUMERIC
/// fraction's nearest float, which it shares with the numerics nearest it). A form only
/// picks candidates: every candidate's key values are then compared as SQL compares them
/// ([`JoinTable::equals`]), so forms may collide, never split equal values. Text and
/// bytes are borrowed: no allocation per row.
#[derive(Hash)]
enum HashForm<'v> {
    Int(i64),
    Float(u64),
    Text(&'v str),
    Bool(bool),
    /// A date or a timestamp, on one scale (a date as its midnight), as SQL compares them.
    Micros(i64),
    Time(i64),
    Interval(i128),
    Bytes(&'v [u8]),
    Uuid(&'v [u8; 16]),
    Jsonb(String),
    /// Arrays (and records) equal as SQL compares them may differ in element type (an
    /// int[] and a numeric[]): one form for all, every candidate compared.
    Array,
}

/// The hash form of a value; None for NULL (which equals nothing).
fn hash_form(v: &Value) -> DbResult<Option<HashForm<'_>>> {
    let integral = |f: f64| {
        if f.fract() == 0.0 && f.abs() < 9.2e18 {
            HashForm::Int(f as i64)
        } else {
            HashForm::Float(f.to_bits())
        }
    };
    Ok(Some(match v {
        Value::Null => return Ok(None),
        Value::Int(i) => HashForm::Int(*i),
        Value::Float(f) => integral(*f),
        // A float4 equals the double it widens to.
        Value::Float4(f) => integral(f64::from(*f)),
        Value::Numeric(n) => match crate::numeric::as_exact_i64(n) {
            Some(i) => HashForm::Int(i),
            None => integral(Num::N((**n).clone()).as_f64()),
        },
        Value::Text(t) => HashForm::Text(t),
        Value::Bool(b) => HashForm::Bool(*b),
        Value::Date(d) => HashForm::Micros(crate::datetime::date_to_timestamp(*d)),
        Value::Timestamp(t) | Value::TimestampTz(t) => HashForm::Micros(*t),
        Value::Time(t) => HashForm::Time(*t),
        Value::Interval(iv) => HashForm::Interval(iv.comparable()),
        Value::Bytea(b) => HashForm::Bytes(b),
        Value::Uuid(u) => HashForm::Uuid(u),
        // Equal jsonb values of different texts (1.0, 1.00) share a form.
        Value::Jsonb(t) => HashForm::Jsonb(crate::json::equality_key(t)?),
        // PostgreSQL's json has no equality.
        Value::Json(_) => return Err(DbError::DatatypeMismatch("json = json".into())),
        Value::Array(_) | Value::Record(_) => HashForm::Array,
    }))
}

/// The hash of a key's values; None if one is NULL.
fn key_hash<V: std::borrow::Borrow<Value>>(values: &[V]) -> DbResult<Option<u64>> {
    use std::hash::{Hash, Hasher};
    let mut hasher = rustc_hash::FxHasher::default();
    for v in values {
        match hash_form(v.borrow())? {
            Some(form) => form.hash(&mut hasher),
            None => return Ok(None),
        }
    }
    Ok(Some(hasher.finish()))
}

/// The columns of a join's key expressions, if every one is a plain column.
fn key_columns(exprs: &[&Expr]) -> Option<Vec<usize>> {
    exprs
        .iter()
        .map(|e| match e {
            Expr::Column(c) => Some(*c),
            _ => None,
        })
        .collect()
}

/// The key values of a probing row: a column borrowed, an expression's value owned.
type ProbeKey<'r> = smallvec::SmallVec<[std::borrow::Cow<'r, Value>; 4]>;

/// The key values of `exprs` on `row` and their hash (None if one is NULL).
fn probe_key<'r>(exprs: &[&Expr], row: &'r [Value]) -> DbResult<(ProbeKey<'r>, Option<u64>)> {
    let mut key = ProbeKey::new();
    for e in exprs {
        key.push(match e {
            Expr::Column(c) => std::borrow::Cow::Borrowed(&row[*c]),
            other => std::borrow::Cow::Owned(other.eval(row, &[])?),
        });
    }
    let hash = key_hash(&key)?;
    Ok((key, hash))
}

/// The build side of a hash join: buckets chosen by the hash's high bits, each a chain
/// of its rows in the rows' order, every row's hash tag (its low 32 bits) beside the
/// chain, and the rows' key values: read from the rows themselves when every key is a
/// column (the probe reads the row it joins anyway), else evaluated once into `keys`.
/// Three flat arrays of 32-bit numbers (the bucket heads one to two per row): for
/// 100,000 build rows they take 1.2 MB where a hash map of each hash's first row took
/// 2 MB of 16-byte entries, each probe's first cache miss. A row is a candidate when its
/// tag is the probe's, then compared as SQL compares (`equals`); no allocation per key.
struct JoinTable<'r> {
    rows: BuildRows<'r>,
    /// Per bucket, its first row, or `EMPTY`.
    heads: Vec<u32>,
    /// Per row, the next row of its bucket, or `EMPTY`.
    next: Vec<u32>,
    /// Per row, the low 32 bits of its key's hash (meaningless for a row whose key has a
    /// NULL: it is in no chain).
    tags: Vec<u32>,
    /// 64 minus the bits of a bucket number: a hash's bucket is `hash >> bucket_shift`.
    bucket_shift: u32,
    /// Some: every key is a column of the rows, these. None: the values are in `keys`.
    key_columns: Option<Vec<usize>>,
    /// Per row, its key values (`width` of them), when they are not all columns.
    keys: Vec<Value>,
    width: usize,
}

impl<'r> JoinTable<'r> {
    /// No row: the end of a chain, an empty bucket.
    const EMPTY: u32 = u32::MAX;
    /// The most rows a build side holds (row numbers are 32-bit, `EMPTY` excluded).
    const MAX_ROWS: usize = (1 << 31) - 1;

    fn build(exprs: &[&Expr], rows: BuildRows<'r>) -> DbResult<JoinTable<'r>> {
        if rows.len() > Self::MAX_ROWS {
            return Err(DbError::ProgramLimitExceeded(format!(
                "a hash join's build side of {} rows (at most {})",
                rows.len(),
                Self::MAX_ROWS
            )));
        }
        let width = exprs.len();
        let key_columns = key_columns(exprs);
        // At least one bucket per row: chains of ~1.5 rows at most on average.
        let bucket_bits = rows.len().max(16).next_power_of_two().trailing_zeros();
        let mut table = JoinTable {
            rows,
            heads: vec![Self::EMPTY; 1 << bucket_bits],
            next: vec![Self::EMPTY; rows.len()],
            tags: vec![0; rows.len()],
            bucket_shift: 64 - bucket_bits,
            key_columns,
            keys: Vec::new(),
            width,
        };
        let mut hashes = Vec::with_capacity(rows.len());
        for i in 0..rows.len() {
            let row = rows.row(i);
            let hash = match &table.key_columns {
                Some(columns) => {
                    let values: ProbeKey =
                        columns.iter().map(|&c| std::borrow::Cow::Borrowed(&row[c])).collect();
                    key_hash(&values)?
                }
                None => {
                    for e in exprs {
                        table.keys.push(e.eval(row, &[])?);
                    }
                    key_hash(&table.keys[table.keys.len() - width..])?
                }
            };
            hashes.push(hash);
        }
        // Linked from the last row to the first, so each chain runs in the rows' order.
        for (i, hash) in hashes.into_iter().enumerate().rev() {
            if let Some(hash) = hash {
                let bucket = table.bucket(hash);
                table.next[i] = table.heads[bucket];
                table.tags[i] = hash as u32;
                table.heads[bucket] = i as u32;
            }
        }
        Ok(table)
    }

    fn bucket(&self, hash: u64) -> usize {
        // (The high bits: Fx's low bits depend on the key's low bits only.)
        (hash >> self.bucket_shift) as usize
    }

    /// The rows whose key may hash to `hash` (the same bucket and tag), in order
    /// (candidates: see `equals`).
    fn candidates(&self, hash: u64) -> impl Iterator<Item = usize> + '_ {
        let mut link = self.heads[self.bucket(hash)];
        let tag = hash as u32;
        std::iter::from_fn(move || {
            while link != Self::EMPTY {
                let row = link as usize;
                link = self.next[row];
                if self.tags[row] == tag {
                    return Some(row);
                }
            }
            None
        })
    }

    /// Whether row `i`'s key equals `probe`, value by value as SQL compares.
    fn equals<V: std::borrow::Borrow<Value>>(&self, i: usize, probe: &[V]) -> DbResult<bool> {
        for (n, p) in probe.iter().enumerate() {
            let k = match &self.key_columns {
                Some(columns) => &self.rows.row(i)[columns[n]],
                None => &self.keys[i * self.width + n],
            };
            let equal = match (k, p.borrow()) {
                // Most join keys: integers, compared without the general comparison.
                (Value::Int(a), Value::Int(b)) => a == b,
                (k, p) => compare(k, p)? == Some(std::cmp::Ordering::Equal),
            };
            if !equal {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The rows a hash join's table is built on: wide rows, or packed rows.
#[derive(Clone, Copy)]
enum BuildRows<'r> {
    Wide(&'r [Vec<Value>]),
    Packed(&'r PackedRows),
}

impl<'r> BuildRows<'r> {
    fn len(&self) -> usize {
        match self {
            BuildRows::Wide(rows) => rows.len(),
            BuildRows::Packed(packed) => packed.len(),
        }
    }

    fn row(&self, i: usize) -> &'r [Value] {
        match self {
            BuildRows::Wide(rows) => &rows[i],
            BuildRows::Packed(packed) => packed.row(i),
        }
    }
}

/// The build side of a hash join whose probing rows stream (a large stored table on the
/// right): of each wide row, only the columns something reads, the rows side by side in
/// one array. A probe's match is a random read of the build side; a wide row is an
/// allocation of its own, reached through its pointer and several times as wide, so this
/// makes one cache miss of two or three (the join of 1,000,000 orders with 100,000
/// customers spent a third of its time in the build rows' misses).
struct PackedRows {
    /// The wide row's columns kept, in order.
    columns: Vec<usize>,
    /// Row `i` is `values[i * columns.len()..][..columns.len()]`.
    values: Vec<Value>,
    /// The join's key expressions over the packed rows.
    keys: Vec<Expr>,
    rows: usize,
}

impl PackedRows {
    /// Packs `rows`, the wide rows of `node` (moved, not copied), for a join on the
    /// columns `keys` of them.
    fn of(
        scope: &Scope,
        needed: Option<&[bool]>,
        node: &Node,
        keys: &[usize],
        rows: Vec<Vec<Value>>,
    ) -> PackedRows {
        let mut entries = Vec::new();
        node.entries(&mut entries);
        let mut columns: Vec<usize> = entries
            .iter()
            .flat_map(|&e| {
                let (from, to) = slot(scope, e);
                from..to
            })
            .filter(|&c| needed.is_none_or(|n| n[c]))
            .collect();
        // (The join reads its keys: `needed` has them. Kept whatever it says.)
        for &k in keys {
            if !columns.contains(&k) {
                columns.push(k);
            }
        }
        columns.sort_unstable();
        let packed_keys = keys
            .iter()
            .map(|k| Expr::Column(columns.binary_search(k).expect("a key column is packed")))
            .collect();
        let count = rows.len();
        let mut values = Vec::with_capacity(count * columns.len());
        for mut row in rows {
            values.extend(columns.iter().map(|&c| std::mem::replace(&mut row[c], Value::Null)));
        }
        PackedRows { columns, values, keys: packed_keys, rows: count }
    }

    /// No rows yet, the columns as [`PackedRows::of`] chooses them.
    fn empty(scope: &Scope, needed: Option<&[bool]>, node: &Node, keys: &[usize]) -> PackedRows {
        PackedRows::of(scope, needed, node, keys, Vec::new())
    }

    fn len(&self) -> usize {
        self.rows
    }

    /// Writes packed row `i`'s columns into the wide row `wide` (see
    /// `run_hash_join_probing_with_left`).
    fn write_into(&self, wide: &mut [Value], i: usize) {
        for (v, &c) in self.row(i).iter().zip(&self.columns) {
            wide[c].clone_from(v);
        }
    }

    /// Sets the packed columns of the wide row `wide` to NULL.
    fn clear_in(&self, wide: &mut [Value]) {
        for &c in &self.columns {
            wide[c] = Value::Null;
        }
    }

    fn row(&self, i: usize) -> &[Value] {
        let width = self.columns.len();
        &self.values[i * width..(i + 1) * width]
    }

    fn keys(&self) -> Vec<&Expr> {
        self.keys.iter().collect()
    }

    /// Makes in `joined` the wide row of packed row `i` joined with the wide row
    /// `probe` (whose columns of the packed rows' relations are NULL).
    fn combine(&self, joined: &mut Vec<Value>, i: usize, probe: &[Value]) {
        if joined.len() == probe.len() {
            joined.clone_from_slice(probe);
        } else {
            *joined = probe.to_vec();
        }
        self.write_into(joined, i);
    }
}

/// Whether every equality of a hash join holds on a combined row, as SQL compares.
fn equal_on(equi: &[(Expr, Expr)], row: &[Value]) -> DbResult<bool> {
    for (l, r) in equi {
        if compare(&l.eval(row, &[])?, &r.eval(row, &[])?)? != Some(std::cmp::Ordering::Equal) {
            return Ok(false);
        }
    }
    Ok(true)
}

fn split_and(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Binary(BinOp::And, a, b) => {
            split_and(*a, out);
            split_and(*b, out);
        }
        other => out.push(other),
    }
}

fn and_all(conjuncts: Vec<Expr>) -> Option<Expr> {
    conjuncts.into_iter().reduce(|a, b| Expr::Binary(BinOp::And, Box::new(a), Box::new(b)))
}

/// The scope entries an expression reads.
fn entries_of(scope: &Scope, e: &Expr) -> Vec<usize> {
    let mut columns = Vec::new();
    e.columns(&mut columns);
    let mut entries: Vec<usize> = columns
        .into_iter()
        .map(|c| scope.entries.iter().rposition(|en| en.offset <= c).expect("a column of the scope"))
        .collect();
    entries.sort_unstable();
    entries.dedup();
    entries
}

/// The one scope entry an expression reads, if it reads exactly one.
fn single_entry(scope: &Scope, e: &Expr) -> Option<usize> {
    match entries_of(scope, e).as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// `e` with its columns moved down by `offset` (from the wide row to a relation's own).
fn shift(e: &Expr, offset: usize) -> Expr {
    e.clone().map_columns(&mut |c| c - offset)
}

/// Splits conjuncts into equalities between the `left` and `right` entries (as
/// (left side, right side)) and the rest.
fn split_equi(
    scope: &Scope,
    conjuncts: Vec<Expr>,
    left: &[usize],
    right: &[usize],
) -> (Vec<(Expr, Expr)>, Vec<Expr>) {
    let within = |e: &Expr, set: &[usize]| {
        let entries = entries_of(scope, e);
        !entries.is_empty() && entries.iter().all(|x| set.contains(x)) && !e.has_subquery()
    };
    let mut equi = Vec::new();
    let mut rest = Vec::new();
    for c in conjuncts {
        if let Expr::Binary(BinOp::Eq, a, b) = &c {
            if within(a, left) && within(b, right) {
                equi.push((*a.clone(), *b.clone()));
                continue;
            }
            if within(b, left) && within(a, right) {
                equi.push((*b.clone(), *a.clone()));
                continue;
            }
        }
        rest.push(c);
    }
    (equi, rest)
}

/// Orders inner joins greedily (see the module docs), placing each conjunct of `rest` at
/// the first join where every relation it reads is present; what is left in `rest`
/// reads no relation or holds a subquery (the caller applies it to the joined rows).
fn order_inner(scope: &Scope, leaves: Vec<Node>, rest: &mut Vec<Expr>) -> Node {
    let mut remaining: Vec<Option<Node>> = leaves.into_iter().map(Some).collect();
    let first = (0..remaining.len())
        .min_by(|&a, &b| {
            estimate(remaining[a].as_ref().unwrap()).total_cmp(&estimate(remaining[b].as_ref().unwrap()))
        })
        .expect("several relations");
    let mut joined = vec![first];
    let mut root = remaining[first].take().expect("present");
    while joined.len() < remaining.len() {
        let connected = |e: usize| {
            rest.iter().any(|c| {
                let entries = entries_of(scope, c);
                matches!(c, Expr::Binary(BinOp::Eq, ..))
                    && entries.contains(&e)
                    && entries.iter().all(|x| *x == e || joined.contains(x))
                    && entries.len() > 1
            })
        };
        let candidates: Vec<usize> = (0..remaining.len()).filter(|&e| remaining[e].is_some()).collect();
        let pool: Vec<usize> = match candidates.iter().copied().filter(|&e| connected(e)).collect::<Vec<_>>()
        {
            c if c.is_empty() => candidates,
            c => c,
        };
        let next = pool
            .into_iter()
            .min_by(|&a, &b| {
                estimate(remaining[a].as_ref().unwrap()).total_cmp(&estimate(remaining[b].as_ref().unwrap()))
            })
            .expect("a relation remains");
        let right = remaining[next].take().expect("present");
        // The conjuncts complete once `next` joins.
        let mut now = Vec::new();
        let mut later = Vec::new();
        for c in rest.drain(..) {
            let entries = entries_of(scope, &c);
            if !entries.is_empty()
                && entries.contains(&next)
                && entries.iter().all(|x| *x == next || joined.contains(x))
                && !c.has_subquery()
            {
                now.push(c);
            } else {
                later.push(c);
            }
        }
        *rest = later;
        let (equi, others) = split_equi(scope, now, &joined, &[next]);
        let lookup = choose_lookup(scope, estimate(&root), &right, &equi);
        root = Node::Join {
            kind: JoinKind::Inner,
            left: Box::new(root),
            right: Box::new(right),
            equi,
            condition: and_all(others),
            lookup,
        };
        joined.push(next);
    }
    root
}

/// The estimated rows a node hands on: a scan's from `scan_node`; a join's, for an
/// equality join, the left side's times the fraction of its table the right scan keeps
/// (as if each left row matched one row of the right table: right for a join on the
/// right table's key, low for a fan-out); for a join without an equality, the product.
fn estimate(n: &Node) -> f64 {
    match n {
        Node::Scan { estimate, .. } => *estimate,
        // PostgreSQL's default estimate of a function's rows.
        Node::Function { .. } => 1000.0,
        Node::Join { left, right, equi, .. } => {
            let (l, r) = (estimate(left), estimate(right));
            let joined = match right.as_ref() {
                Node::Scan { rows, .. } if !equi.is_empty() => l * (r / rows.max(1.0)),
                _ if !equi.is_empty() => l.max(r),
                _ => l * r,
            };
            joined.max(1.0)
        }
    }
}

/// Whether a join runs as [`Session::run_hash_join_probing_with_left`]: an equality join
/// on columns of its right side (not an index nested loop, nor a lateral right side,
/// which runs once per left row), built on the right side when it is an outer join
/// (whose left rows are probing rows anyway) or is expected to be the smaller side.
fn builds_on_right(
    scope: &Scope,
    kind: JoinKind,
    left: &Node,
    right: &Node,
    equi: &[(Expr, Expr)],
    by_lookup: bool,
) -> bool {
    let lateral_right = match right {
        Node::Scan { entry, .. } => scope.entries[*entry].lateral,
        Node::Function { scan, .. } => scan.is_lateral(),
        Node::Join { .. } => {
            let mut entries = Vec::new();
            right.entries(&mut entries);
            entries.iter().any(|&e| scope.entries[e].lateral)
        }
    };
    !equi.is_empty()
        && !by_lookup
        && !lateral_right
        && equi.iter().all(|(_, rk)| matches!(rk, Expr::Column(_)))
        && (kind != JoinKind::Inner || estimate(right) <= estimate(left))
}

/// An index nested loop for joining `right` to rows estimated at `outer_rows` on the
/// equalities `equi` (left side, right side), if `right` is a scan of a stored table, some
/// of the equalities pin a prefix of its primary key or of a secondary index to
/// expressions of the left rows, and the cost rule (see `LOOKUP_COST_FULL_KEY`) favours it.
/// Of several keys, the one pinned whole and unique, else the longest prefix pinned, the
/// primary key first on a tie.
fn choose_lookup(scope: &Scope, outer_rows: f64, right: &Node, equi: &[(Expr, Expr)]) -> Option<Lookup> {
    let Node::Scan { entry, access, estimate: scan_rows, rows, .. } = right else { return None };
    let relation = &scope.entries[*entry].relation;
    if equi.is_empty()
        || relation.derived.is_some()
        || relation.function.is_some()
        || crate::views::is_view(&relation.name)
    {
        return None;
    }
    let offset = scope.entries[*entry].offset;
    let schema = &relation.schema;
    // The outer expression each column of the right table is equal to.
    let pinned = |column: usize| {
        equi.iter().find_map(|(l, r)| match r {
            Expr::Column(c) if *c == offset + column => Some(l.clone()),
            _ => None,
        })
    };
    let usable = |column: usize| {
        !matches!(schema.columns[column].ty, DataType::Json | DataType::Jsonb | DataType::Array(_))
    };
    let mut best: Option<(Lookup, bool, f64)> = None;
    let keys = std::iter::once((None, &schema.primary_key, true))
        .chain(schema.indexes.iter().enumerate().map(|(i, ix)| (Some(i), &ix.columns, ix.unique)));
    for (index, columns, unique) in keys {
        let outer: Vec<Expr> =
            columns.iter().map_while(|&c| if usable(c) { pinned(c) } else { None }).collect();
        if outer.is_empty() {
            continue;
        }
        let whole = unique && outer.len() == columns.len();
        let cost = match (index, whole) {
            (None, true) => LOOKUP_COST_FULL_KEY,
            (None, false) => LOOKUP_COST_KEY_PREFIX,
            (Some(_), _) => LOOKUP_COST_SECONDARY,
        };
        let better = match &best {
            None => true,
            Some((b, b_whole, _)) => {
                (whole && !b_whole) || (whole == *b_whole && outer.len() > b.outer.len())
            }
        };
        if better {
            best = Some((Lookup { index, outer }, whole, cost));
        }
    }
    let (lookup, _, cost) = best?;
    // The rows the hash join's build would read: all of them for a sequential scan.
    let read = match access {
        Access::Full => rows.max(1.0),
        _ => *scan_rows,
    };
    (outer_rows * cost < read).then_some(lookup)
}

/// An expression of a plan as EXPLAIN shows it: a column by its qualified name.
fn expr_text(scope: &Scope, e: &Expr) -> String {
    match e {
        Expr::Column(c) => match scope.entries.iter().rev().find(|en| en.offset <= *c) {
            Some(entry) => format!(
                "{}.{}",
                entry.relation.reference_name(),
                entry.relation.schema.columns[c - entry.offset].name
            ),
            None => format!("${c}"),
        },
        Expr::Literal(v) => v.to_string(),
        _ => "(expression)".to_string(),
    }
}
