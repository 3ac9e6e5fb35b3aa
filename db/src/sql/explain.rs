//! EXPLAIN: the plan a statement runs, in PostgreSQL's layout (one column, `QUERY PLAN`,
//! a line per row), so a DBA can see that a point or range predicate on the primary key
//! does not scan, and which steps a query adds above its scan:
//!
//! ```text
//! Limit                                      OFFSET / LIMIT
//!   ->  LockRows                             FOR UPDATE
//!         ->  Sort                           ORDER BY, unless the rows come in its order
//!               Sort Key: <the ORDER BY>
//!               ->  Unique                   DISTINCT
//!                     ->  WindowAgg          window functions (N calls)
//!                     ->  GroupAggregate     GROUP BY (Aggregate: aggregates alone)
//!                           Group Key: <the GROUP BY>
//!                     ->  MixedAggregate     GROUPING SETS, ROLLUP, CUBE (HashAggregate without
//!                           an empty set): Hash Key per set, Group Key: () per empty set
//!                           Filter: <the HAVING>
//!                           ->  <the access path>
//! Index Scan using t_pkey on t  (1 key)      a point lookup per key
//! Index Range Scan using t_pkey on t         keys within bounds, in order
//! Index Scan [Backward] using i on t         every row in the index's order (ORDER BY
//!                                            its first columns with a LIMIT; under a
//!                                            Limit, min/max of its first column)
//! Seq Scan on t                              every row
//! Result  (no row can match)                 the WHERE is never true: nothing is read
//!   Filter: <the WHERE>                      what each row read is checked against
//! ```
//!
//! A SELECT's plan is the one it runs: the same compiled `SelectPlan` (`query.rs`), with
//! the bind values given, and the same planner (`access::plan`) on its compiled WHERE. An
//! UPDATE, DELETE or INSERT is compiled as it would run (unknown tables and columns are
//! errors).
//!
//! `EXPLAIN ANALYZE` (or `EXPLAIN (ANALYZE)`) runs the statement, as PostgreSQL does (an
//! UPDATE changes its rows, in the session's transaction), and adds to each node the rows
//! it handed on, `(actual rows=N loops=1)`, the rows a filter removed (when it removed
//! any), and the planning and execution times. No node is timed on its own: the figures are PostgreSQL's
//! `TIMING OFF` form. Options: ANALYZE, SUMMARY (the two times), COSTS and TIMING
//! (accepted and checked; no costs are shown and no node is timed, whatever they say), and
//! FORMAT TEXT; any other is refused (0A000).

use std::time::Instant;

use sqlparser::ast;

use crate::database::Session;
use crate::error::{DbError, DbResult};
use crate::sql::access::{plan, Access};
use crate::sql::exec::{QueryResult, ResultColumn};
use crate::sql::expr::{Binder, Expr, Relation};
use crate::sql::query::{SelectCounts, SelectPlan};
use crate::temp_tables::visible_name;
use crate::value::{DataType, Value};

/// What an EXPLAIN asks for beyond the plan.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ExplainOptions {
    /// Run the statement and show what each node handed on.
    pub analyze: bool,
    /// With `analyze`: the planning and execution times (on unless SUMMARY OFF).
    pub summary: Option<bool>,
}

impl ExplainOptions {
    /// The options of `EXPLAIN [ANALYZE] [(option [value], ...)]`, checked.
    pub(crate) fn parse(analyze: bool, options: Option<&[ast::UtilityOption]>) -> DbResult<ExplainOptions> {
        let mut parsed = ExplainOptions { analyze, summary: None };
        for option in options.unwrap_or_default() {
            let name = option.name.value.to_ascii_uppercase();
            let on = || option_flag(&name, option.arg.as_ref());
            match name.as_str() {
                "ANALYZE" => parsed.analyze = on()?,
                "SUMMARY" => parsed.summary = Some(on()?),
                // No costs are shown and no node is timed: accepted, checked, and changing
                // nothing.
                "COSTS" | "TIMING" => {
                    on()?;
                }
                "FORMAT" => match option.arg.as_ref().map(|a| a.to_string().to_ascii_uppercase()) {
                    Some(format) if format == "TEXT" => {}
                    Some(format) => {
                        return Err(DbError::Unsupported(format!("EXPLAIN in FORMAT {format} (only TEXT)")))
                    }
                    None => return Err(syntax(format!("EXPLAIN option {name} requires a value"))),
                },
                _ => return Err(DbError::Unsupported(format!("the EXPLAIN option {name}"))),
            }
        }
        Ok(parsed)
    }
}

/// A boolean EXPLAIN option's value: none (true), TRUE/FALSE, ON/OFF, 1/0.
fn option_flag(name: &str, arg: Option<&ast::Expr>) -> DbResult<bool> {
    let Some(arg) = arg else { return Ok(true) };
    match arg.to_string().to_ascii_uppercase().trim_matches('\'') {
        "TRUE" | "ON" | "1" | "YES" => Ok(true),
        "FALSE" | "OFF" | "0" | "NO" => Ok(false),
        other => Err(DbError::InvalidParameterValue {
            parameter: format!("EXPLAIN {name}"),
            value: other.to_string(),
            allowed: "TRUE, FALSE, ON, OFF, 1, 0".into(),
        }),
    }
}

fn syntax(message: String) -> DbError {
    DbError::Syntax { message, position: 0 }
}

/// One node of a plan, as shown.
struct Node {
    text: String,
    details: Vec<String>,
    /// With ANALYZE: the rows the node handed on.
    actual: Option<u64>,
}

impl Node {
    fn new(text: impl Into<String>) -> Node {
        Node { text: text.into(), details: Vec::new(), actual: None }
    }

    fn detail(mut self, line: impl Into<String>) -> Node {
        self.details.push(line.into());
        self
    }
}

/// Lays out `nodes`, each the only child of the one before, as PostgreSQL does.
fn lines_of(nodes: Vec<Node>) -> Vec<String> {
    let mut lines = Vec::new();
    for (depth, node) in nodes.into_iter().enumerate() {
        let (node_indent, detail_indent) = match depth {
            0 => (String::new(), "  ".to_string()),
            d => (format!("{}->  ", " ".repeat(2 + 6 * (d - 1))), " ".repeat(8 + 6 * (d - 1))),
        };
        let actual = node.actual.map_or(String::new(), |rows| format!("  (actual rows={rows} loops=1)"));
        lines.push(format!("{node_indent}{}{actual}", node.text));
        for detail in node.details {
            lines.push(format!("{detail_indent}{detail}"));
        }
    }
    lines
}

/// The node of the access to `relation` with `filter` (compiled) as the WHERE, `shown` as
/// written.
fn access_node(relation: &Relation, filter: Option<&Expr>, shown: Option<String>) -> Node {
    // A temporary table, and its indexes, by the names its user wrote.
    let name = visible_name(&relation.name);
    let pkey = relation.schema.primary_key_name();
    let pkey = visible_name(&pkey);
    let text = if crate::views::is_view(name) {
        format!("Seq Scan on {name}  (a v$ view, built for the statement)")
    } else {
        match plan(&relation.schema, filter) {
            Access::Points(keys) => format!(
                "Index Scan using {pkey} on {name}  ({} key{})",
                keys.len(),
                if keys.len() == 1 { "" } else { "s" }
            ),
            Access::Range { .. } => format!("Index Range Scan using {pkey} on {name}"),
            Access::Index { index, within } => {
                let index = visible_name(&relation.schema.indexes[index].name);
                match *within {
                    Access::Points(keys) => format!(
                        "Index Scan using {index} on {name}  ({} key{})",
                        keys.len(),
                        if keys.len() == 1 { "" } else { "s" }
                    ),
                    _ => format!("Index Range Scan using {index} on {name}"),
                }
            }
            Access::Full => format!("Seq Scan on {name}"),
            Access::Empty => "Result  (no row can match)".to_string(),
        }
    };
    let node = Node::new(text);
    match shown {
        Some(filter) => node.detail(format!("Filter: {filter}")),
        None => node,
    }
}

/// The clauses of a SELECT as written, for the detail lines.
struct PlanText {
    filter: Option<String>,
    groups: Vec<String>,
    having: Option<String>,
    sorts: Vec<String>,
}

impl PlanText {
    /// The text of the SELECT `plan_query` compiles from `query`: the same one, through
    /// the same parentheses.
    fn of(query: &ast::Query) -> PlanText {
        let (select, order_by) = match query.body.as_ref() {
            ast::SetExpr::Select(select) => (Some(select), query.order_by.as_ref()),
            ast::SetExpr::Query(inner) => return PlanText::of(inner),
            _ => (None, None),
        };
        let groups = match select.map(|s| &s.group_by) {
            Some(ast::GroupByExpr::Expressions(exprs, _)) => exprs
                .iter()
                .filter(|e| !crate::sql::group_by_distinct::is_marker(e))
                .map(ToString::to_string)
                .collect(),
            _ => Vec::new(),
        };
        let sorts = match order_by.map(|o| &o.kind) {
            Some(ast::OrderByKind::Expressions(exprs)) => exprs.iter().map(ToString::to_string).collect(),
            _ => Vec::new(),
        };
        PlanText {
            filter: select.and_then(|s| s.selection.as_ref()).map(ToString::to_string),
            groups,
            having: select.and_then(|s| s.having.as_ref()).map(ToString::to_string),
            sorts,
        }
    }
}

/// The nodes of a SELECT's plan, top first; with `counts` (ANALYZE), what each handed on.
fn select_nodes(plan: &SelectPlan, text: &PlanText, counts: Option<&SelectCounts>) -> Vec<Node> {
    let unordered = plan.without_order_if_narrow();
    let plan = unordered.as_ref().unwrap_or(plan);
    let mut nodes = Vec::new();
    let actual = |rows: fn(&SelectCounts) -> u64| counts.map(rows);
    if plan.limit.is_some() || plan.offset > 0 {
        nodes.push(Node { actual: actual(|c| c.returned), ..Node::new("Limit") });
    }
    if plan.for_update {
        nodes.push(Node { actual: actual(|c| c.locked), ..Node::new("LockRows") });
    }
    if plan.distinct_on.is_some() {
        // DISTINCT ON keeps the first of each run of the sorted rows: above the sort.
        nodes.push(Node { actual: actual(|c| c.distinct), ..Node::new("Unique") });
    }
    if plan.needs_sort {
        let node = Node::new("Sort").detail(format!("Sort Key: {}", text.sorts.join(", ")));
        nodes.push(Node { actual: actual(|c| c.sorted), ..node });
    }
    if plan.distinct {
        nodes.push(Node { actual: actual(|c| c.distinct), ..Node::new("Unique") });
    }
    if !plan.windows.is_empty() {
        let node = Node::new("WindowAgg").detail(format!("Window Functions: {}", plan.windows.len()));
        let rows = if plan.grouped { |c: &SelectCounts| c.grouped_out } else { |c: &SelectCounts| c.matched };
        nodes.push(Node { actual: actual(rows), ..node });
    }
    if plan.grouped {
        let mut node = if let Some(sets) = &plan.grouping_sets {
            // One pass over the rows feeds every set's groups, each kept in a table by
            // its key, as PostgreSQL's MixedAggregate (its hashed sets); a set of no
            // keys is its one group.
            let keyed = sets.iter().any(|set| !set.is_empty());
            let total = sets.iter().any(|set| set.is_empty());
            let mut node = Node::new(match (keyed, total) {
                (true, true) => "MixedAggregate",
                (true, false) => "HashAggregate",
                (false, _) => "Aggregate",
            });
            for set in sets.iter().filter(|set| !set.is_empty()) {
                let keys: Vec<&str> = set.iter().map(|&k| plan.group_texts[k].as_str()).collect();
                node = node.detail(format!("Hash Key: {}", keys.join(", ")));
            }
            for _ in sets.iter().filter(|set| set.is_empty()) {
                node = node.detail("Group Key: ()".to_string());
            }
            node
        } else if text.groups.is_empty() {
            Node::new("Aggregate")
        } else {
            Node::new("GroupAggregate").detail(format!("Group Key: {}", text.groups.join(", ")))
        };
        if let Some(having) = &text.having {
            node = node.detail(format!("Filter: {having}"));
            if let Some(removed) = counts.map(|c| c.groups - c.grouped_out).filter(|&n| n > 0) {
                node = node.detail(format!("Rows Removed by Filter: {removed}"));
            }
        }
        nodes.push(Node { actual: actual(|c| c.grouped_out), ..node });
    }
    let mut access = match &plan.relation {
        // Several relations: the join tree, its first line the node, the others (its
        // inputs, indented) details.
        None if plan.joins.is_some() => {
            let lines = plan.joins.as_ref().expect("joins").explain();
            let mut node = Node::new(lines[0].trim_start_matches("-> ").to_string());
            for line in &lines[1..] {
                node = node.detail(line.clone());
            }
            match &text.filter {
                Some(filter) => node.detail(format!("Filter: {filter}")),
                None => node,
            }
        }
        Some(relation) => match plan.ordered {
            Some(ordered) => {
                if ordered.first_only {
                    // min/max: the first row of the index's order the WHERE keeps.
                    nodes.push(Node::new("Limit  (first row: min/max through the index)"));
                }
                let name = match ordered.index {
                    None => relation.schema.primary_key_name(),
                    Some(i) => relation.schema.indexes[i].name.clone(),
                };
                let backward = if ordered.backward { " Backward" } else { "" };
                let node = Node::new(format!(
                    "Index Scan{backward} using {} on {}",
                    visible_name(&name),
                    visible_name(&relation.name)
                ));
                match text.filter.clone() {
                    Some(filter) => node.detail(format!("Filter: {filter}")),
                    None => node,
                }
            }
            None => access_node(relation, plan.filter.as_ref(), text.filter.clone()),
        },
        None => match &text.filter {
            Some(filter) => Node::new("Result").detail(format!("One-Time Filter: {filter}")),
            None => Node::new("Result"),
        },
    };
    if let Some(c) = counts {
        access.actual = Some(c.matched);
        // As PostgreSQL's text format: only when a filter on rows read removed some.
        if plan.relation.is_some() && c.read > c.matched {
            access = access.detail(format!("Rows Removed by Filter: {}", c.read - c.matched));
        }
    }
    nodes.push(access);
    nodes
}

/// EXPLAIN's one result column.
pub(crate) fn plan_column() -> ResultColumn {
    ResultColumn { name: "QUERY PLAN".into(), ty: Some(DataType::Text { max_chars: None }) }
}

/// The rows a DML statement changed, from its result.
fn changed_rows(result: &QueryResult) -> u64 {
    match result {
        QueryResult::Command { rows_affected, .. } => *rows_affected,
        QueryResult::Rows { rows, .. } => rows.len() as u64,
    }
}

fn milliseconds(since: Instant) -> String {
    format!("{:.3} ms", since.elapsed().as_secs_f64() * 1e3)
}

impl Session {
    /// `EXPLAIN [ANALYZE] statement`: its plan as rows of text.
    pub(crate) fn explain(
        &mut self,
        statement: &ast::Statement,
        params: &[Value],
        options: ExplainOptions,
    ) -> DbResult<QueryResult> {
        let unsupported = || DbError::Unsupported(format!("EXPLAIN of {}", first_words(statement)));
        let planning = Instant::now();
        let mut planning_time = None;
        let mut execution_time = None;
        let mut nodes = match statement {
            ast::Statement::Query(query) if crate::sql::dml_with::modifies_data(query) => {
                return Err(DbError::Unsupported(
                    "EXPLAIN of a statement with data-modifying WITH queries".into(),
                ))
            }
            ast::Statement::Query(query) => {
                let plan = self.plan_query(query, params)?.ok_or_else(unsupported)?;
                let text = PlanText::of(query);
                if options.analyze {
                    planning_time = Some(milliseconds(planning));
                    let mut counts = SelectCounts::default();
                    let executing = Instant::now();
                    self.execute_select(&plan, &mut counts)?;
                    execution_time = Some(milliseconds(executing));
                    select_nodes(&plan, &text, Some(&counts))
                } else {
                    select_nodes(&plan, &text, None)
                }
            }
            _ if crate::sql::joined_dml::joined_parts(statement).is_some() => {
                // The join as its query would run (EXPLAIN ANALYZE runs the statement).
                let (verb, target, others, selection) =
                    crate::sql::joined_dml::joined_parts(statement).expect("a joined UPDATE or DELETE");
                let query = crate::sql::joined_dml::joined_query(target, others, selection)?;
                let plan = self.plan_query(&query, params)?.ok_or_else(unsupported)?;
                let mut nodes = vec![Node::new(format!("{verb} on {}", target.relation))];
                nodes.extend(select_nodes(&plan, &PlanText::of(&query), None));
                nodes
            }
            ast::Statement::Update(update) => {
                // Compiled as it would run: its table, columns and WHERE checked.
                let compiled = self.compile_update(update, Some(params))?;
                let relation = compiled.relation();
                vec![
                    Node::new(format!("Update on {}", visible_name(&relation.name))),
                    self.access_of(relation, update.selection.as_ref(), params)?,
                ]
            }
            ast::Statement::Delete(delete) => {
                let compiled = self.compile_delete(delete, Some(params))?;
                let relation = compiled.relation();
                vec![
                    Node::new(format!("Delete on {}", visible_name(&relation.name))),
                    self.access_of(relation, delete.selection.as_ref(), params)?,
                ]
            }
            ast::Statement::Insert(insert) => {
                // Its table and target columns checked.
                self.insert_target(insert)?;
                let source = match insert.source.as_ref().map(|s| s.body.as_ref()) {
                    Some(ast::SetExpr::Values(values)) => format!("Values  ({} rows)", values.rows.len()),
                    _ => "Query".to_string(),
                };
                vec![Node::new(format!("Insert on {}", insert.table)), Node::new(source)]
            }
            _ => return Err(unsupported()),
        };
        if options.analyze && !matches!(statement, ast::Statement::Query(_)) {
            // The change runs as it would alone, in the session's transaction. Its node
            // returns no rows (no RETURNING is shown); its input handed on the rows changed.
            planning_time = Some(milliseconds(planning));
            let executing = Instant::now();
            let result = match statement {
                ast::Statement::Update(update) => self.update_statement(update, params, None)?,
                ast::Statement::Delete(delete) => self.delete_statement(delete, params, None)?,
                ast::Statement::Insert(insert) => self.insert_statement(insert, params, None)?,
                _ => unreachable!("only DML reaches here"),
            };
            execution_time = Some(milliseconds(executing));
            let changed = changed_rows(&result);
            // The change node hands on the rows of its RETURNING, none without one.
            nodes[0].actual = Some(if matches!(result, QueryResult::Rows { .. }) { changed } else { 0 });
            nodes[1].actual = Some(changed);
        }
        let mut lines = lines_of(nodes);
        if options.analyze && options.summary != Some(false) {
            lines.extend(planning_time.map(|t| format!("Planning Time: {t}")));
            lines.extend(execution_time.map(|t| format!("Execution Time: {t}")));
        }
        Ok(QueryResult::rows_of_query(
            vec![plan_column()],
            lines.into_iter().map(|l| vec![Value::Text(l)]).collect(),
        ))
    }

    /// The access node of an UPDATE or DELETE on `relation` with `selection` as the WHERE.
    fn access_of(
        &self,
        relation: &Relation,
        selection: Option<&ast::Expr>,
        params: &[Value],
    ) -> DbResult<Node> {
        let filter = selection
            .map(|e| Binder::new(Some(relation), params).in_session(self).scalar(e, "WHERE"))
            .transpose()?;
        Ok(access_node(relation, filter.as_ref(), selection.map(ToString::to_string)))
    }
}

/// The statement's first two words, upper case (for "EXPLAIN of ... is not supported").
fn first_words(statement: &ast::Statement) -> String {
    let text = statement.to_string();
    text.split_whitespace().take(2).collect::<Vec<_>>().join(" ").to_uppercase()
}
