#!/usr/bin/env python3
"""Turns a capture of capture.sh into docs/catalog-queries.md: every statement each client
sent, grouped by client and step and deduplicated, what each needs (the pg_catalog and
information_schema relations and the columns it reads, the functions, operators, casts
and SQL features), and what a running redodb answers to each today.

- The statements' text is the server's log (log_statement = 'all', csvlog): one entry
  per Execute (extended protocol) or Query (simple protocol). A session's entries belong
  to the step of its application_name (CLIENT/STEP), including those it logged before the
  client set it (PgJDBC's first SETs).
- The proxy's record (wire.jsonl) gives each execution's parameter types, formats and
  values; the two records are checked against each other (the same statements per step).
- What a statement needs comes from PostgreSQL's own parser (pglast, libpg_query): table
  references resolved through aliases and scopes against the catalog relations'
  columns as PostgreSQL 15 lists them (catalog_columns.tsv), function calls with their
  kind from pg_proc (functions.tsv), operators, casts and syntax from the parse tree.
- With --redodb-port, every execution of the capture is replayed in order against that
  redodb (the same parameter types, formats and values, over the extended protocol, or the
  simple one where the client used it), each step on a connection of its own with the
  step's user and application_name; a statement that fails inside a transaction is
  followed by a ROLLBACK so the next one runs. Then each feature the statements need is
  probed alone (PROBES below) on its own table, so a missing feature is told apart from a
  missing catalog relation.

Usage: analyze.py CAPTURE_DIR OUT.md [--redodb-port N [--redodb-commit TEXT] [--repo DIR]]
(report.sh runs it against a fresh redodb). Needs pglast (pip install pglast==8.8) and
psycopg; with --redodb-port, the clients of capture.sh too.
"""

import argparse
import collections
import csv
import json
import re
import sys

import pglast
from pglast import ast, enums

csv.field_size_limit(sys.maxsize)

CATALOG_SCHEMAS = ("pg_catalog", "information_schema")


# --------------------------------------------------------------------------------------
# The capture


class Statement:
    """One distinct statement text of one client."""

    def __init__(self, client, text):
        self.client = client
        self.text = text
        self.steps = []  # in order of first use
        self.executions = 0
        self.wire = []  # the proxy's executions of it
        self.features = None
        self.replay = collections.Counter()  # outcome text -> count
        self.pg = collections.Counter()  # PostgreSQL's answers (from the proxy's record)
        self.differs = collections.Counter()  # an answer of redodb without an error but not PostgreSQL's
        self.new_errors = collections.Counter()  # redodb's errors where PostgreSQL had none (or another)
        self.same_errors = 0  # executions where both answered the same SQLSTATE
        self.fingerprint = None


def load_steps(capture):
    with open(f"{capture}/steps.tsv", encoding="utf-8") as f:
        return [tuple(line.rstrip("\n").split("\t")) for line in f if line.strip()]


LOG_STATEMENT = re.compile(r"^(statement|execute (fetch from )?(\S+)): (.*)$", re.S)


def load_log(capture):
    """The statements of the server's log, in order: (app, session, text, fetch, error)."""
    with open(f"{capture}/postgresql.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    # csvlog columns: 5 session_id, 11 error_severity, 12 sql_state_code, 13 message,
    # 22 application_name.
    app_of = {}
    for r in rows:
        if "/" in r[22]:
            app_of.setdefault(r[5], r[22])
    out = []
    for r in rows:
        app = app_of.get(r[5])
        if app is None:
            continue  # the capture's own setup sessions
        m = LOG_STATEMENT.match(r[13])
        if r[11] == "LOG" and m:
            out.append({"app": app, "session": r[5], "text": m.group(4), "fetch": bool(m.group(2)), "error": None})
        elif r[11] == "ERROR":
            # An error during an execution follows its entry; one at Bind (where a custom
            # plan folds the parameters' values into constants) has no entry of its own:
            # the log's query column names its statement.
            last = next((e for e in reversed(out) if e["session"] == r[5]), None)
            if last is not None and last["text"] == r[19] and last["error"] is None:
                last["error"] = f"{r[12]} {r[13]}"
            else:
                out.append({"app": app, "session": r[5], "text": r[19], "fetch": False, "error": f"{r[12]} {r[13]} (at Bind)"})
    return out


def answer(c, rec):
    """Gives the server's answer `rec` to the oldest execution of connection `c` still
    waiting for one. An error ends every execution sent before the next Sync (the server
    skips them); a simple query's answers last until its ReadyForQuery."""
    pending = c.setdefault("pending", [])
    kind = rec["kind"]
    if kind == "ReadyForQuery":
        if pending and pending[0]["protocol"] == "simple" and "pg" in pending[0]:
            pending.pop(0)
        return
    if not pending:
        if kind == "ErrorResponse":
            # An error at Parse or Bind can reach the proxy before it has read the
            # Execute that follows in the same write: it ends that Sync's executions.
            c["early_error"] = {"sync": c.get("syncs", 0), "text": f"ERROR {rec['sqlstate']}: {rec['message']}", "used": False}
        return
    e = pending[0]
    if kind == "ErrorResponse":
        e["pg"] = f"ERROR {rec['sqlstate']}: {rec['message']}"
        if e["protocol"] == "extended":
            pending.pop(0)
            while pending and pending[0]["protocol"] == "extended" and pending[0]["sync"] == e["sync"]:
                pending.pop(0)["pg"] = "skipped after an error"
        return
    if kind == "CommandComplete":
        tag = rec["tag"]
        text = f"ok: {rec['rows']} rows" if tag.startswith("SELECT") or rec["rows"] else f"ok: {tag}"
    elif kind == "PortalSuspended":
        text = f"ok: {rec['rows']} rows (suspended)"
    else:
        text = "ok: empty query"
    if e["protocol"] == "simple":
        e["pg"] = text if "pg" not in e else e["pg"] + "; " + text
    else:
        e["pg"] = text
        pending.pop(0)


def load_wire(capture):
    """The executions of the proxy's record, in order: (app, conn, sql, param types,
    param formats, params, result formats, protocol, fetch)."""
    conns = {}
    out = []
    with open(f"{capture}/wire.jsonl", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    for rec in records:
        c = conns.setdefault(rec["conn"], {"app": None, "statements": {}, "portals": {}})
        kind = rec["kind"]
        if kind == "Startup":
            c["app"] = rec["parameters"].get("application_name")
        elif kind == "Query":
            e = {"conn": rec["conn"], "sql": rec["sql"], "protocol": "simple", "fetch": False, "sync": c.get("syncs", 0)}
            out.append(e)
            c.setdefault("pending", []).append(e)
        elif kind == "Sync":
            c["syncs"] = c.get("syncs", 0) + 1
        elif kind in ("CommandComplete", "EmptyQueryResponse", "PortalSuspended", "ErrorResponse", "ReadyForQuery"):
            answer(c, rec)
        elif kind == "Parse":
            c["statements"][rec["statement"]] = (rec["sql"], rec["param_types"])
        elif kind == "Bind":
            sql, types = c["statements"][rec["statement"]]
            c["portals"][rec["portal"]] = {"sql": sql, "types": types, "bind": rec, "executed": False}
        elif kind == "Execute":
            p = c["portals"][rec["portal"]]
            b = p["bind"]
            out.append(
                {
                    "conn": rec["conn"],
                    "sql": p["sql"],
                    "protocol": "extended",
                    "param_types": p["types"],
                    "param_formats": b["param_formats"],
                    "params": b["params"],
                    "result_formats": b["result_formats"],
                    "fetch": p["executed"],
                    "sync": c.get("syncs", 0),
                }
            )
            early = c.get("early_error")
            if early is not None and early["sync"] == c.get("syncs", 0):
                out[-1]["pg"] = "skipped after an error" if early["used"] else early["text"]
                early["used"] = True
            else:
                c.setdefault("pending", []).append(out[-1])
            p["executed"] = True
    # PgJDBC names its application with a SET after the startup: a connection belongs to
    # the application it names first.
    for e in out:
        c = conns[e["conn"]]
        if c["app"] is None or "/" not in c["app"]:
            m = re.match(r"SET application_name = '([^']*)'", e["sql"])
            if m and "/" in m.group(1):
                c["app"] = m.group(1)
    for e in out:
        e["app"] = conns[e["conn"]]["app"]
    return [e for e in out if e["app"] and "/" in e["app"]]


# --------------------------------------------------------------------------------------
# What a statement needs


def load_catalog(capture):
    columns = collections.defaultdict(set)
    kinds = {}
    with open(f"{capture}/catalog_columns.tsv", encoding="utf-8") as f:
        for line in f:
            nsp, rel, relkind, att, _num, _type = line.rstrip("\n").split("\t")
            columns[(nsp, rel)].add(att)
            kinds[(nsp, rel)] = relkind
    functions = collections.defaultdict(list)
    with open(f"{capture}/functions.tsv", encoding="utf-8") as f:
        for line in f:
            nsp, name, kind, retset, args, rettype = line.rstrip("\n").split("\t")
            functions[name].append({"schema": nsp, "kind": kind, "retset": retset == "t", "args": args, "returns": rettype})
    return columns, kinds, functions


class Scope:
    def __init__(self, parent=None):
        self.parent = parent
        self.names = {}  # alias or name -> (schema, relation) or None for a non-catalog item
        self.catalog = []  # the catalog relations of this level, in order


class Features:
    def __init__(self):
        self.relations = set()
        self.columns = collections.defaultdict(set)
        self.functions = collections.Counter()  # "name/arity"
        self.operators = set()
        self.casts = set()
        self.syntax = set()
        self.statements = set()  # statement kinds
        self.types = set()  # column types in CREATE TABLE / ADD COLUMN
        self.kind = None


def returning(stmt):
    """Whether INSERT/UPDATE/DELETE `stmt` has RETURNING (pglast 8: a ReturningClause)."""
    clause = getattr(stmt, "returningClause", None)
    if clause is not None:
        return bool(clause.exprs)
    return bool(getattr(stmt, "returningList", None))


def names_of(nodes):
    return [n.sval for n in nodes if isinstance(n, ast.String)]


class Analyzer:
    def __init__(self, columns, functions):
        self.columns = columns
        self.functions = functions

    def catalog_relation(self, schema, name, ctes):
        if schema in CATALOG_SCHEMAS:
            return (schema, name)
        if schema is None and name not in ctes and ("pg_catalog", name) in self.columns:
            return ("pg_catalog", name)  # pg_catalog is first on the search path
        return None

    def analyze(self, sql):
        f = Features()
        try:
            stmts = pglast.parse_sql(sql)
        except pglast.parser.ParseError as e:
            f.kind = f"unparsable: {e}"
            return f
        kinds = []
        for raw in stmts:
            stmt = raw.stmt
            kind = self.statement_kind(stmt, f)
            kinds.append(kind)
            f.statements.add(kind)
            for col in self.column_defs(stmt):
                names = names_of(col.typeName.names)
                if names[-1] in ("serial", "bigserial", "smallserial"):
                    f.types.add(names[-1])
                else:
                    f.types.add(names[-1] + ("[]" if col.typeName.arrayBounds else ""))
                for c in col.constraints or ():
                    if c.contype == enums.ConstrType.CONSTR_IDENTITY:
                        f.syntax.add("GENERATED ... AS IDENTITY" + (" (sequence options)" if c.options else ""))
            self.walk(stmt, Scope(), f, set())
        f.kind = "; ".join(kinds)
        return f

    def column_defs(self, stmt):
        if isinstance(stmt, ast.CreateStmt):
            return [e for e in stmt.tableElts or () if isinstance(e, ast.ColumnDef)]
        if isinstance(stmt, ast.AlterTableStmt):
            return [c.def_ for c in stmt.cmds if isinstance(getattr(c, "def_", None), ast.ColumnDef)]
        return []

    def statement_kind(self, stmt, f):
        t = type(stmt).__name__
        if isinstance(stmt, ast.SelectStmt):
            return "SELECT"
        if isinstance(stmt, ast.InsertStmt):
            k = "INSERT"
            if stmt.selectStmt is not None and stmt.selectStmt.valuesLists is None:
                k += " ... SELECT"
            if returning(stmt):
                k += " ... RETURNING"
            return k
        if isinstance(stmt, ast.UpdateStmt):
            return "UPDATE ... RETURNING" if returning(stmt) else "UPDATE"
        if isinstance(stmt, ast.DeleteStmt):
            return "DELETE ... RETURNING" if returning(stmt) else "DELETE"
        if isinstance(stmt, ast.TransactionStmt):
            return stmt.kind.name.replace("TRANS_STMT_", "")
        if isinstance(stmt, ast.VariableSetStmt):
            return f"SET {stmt.name}" if stmt.name else "SET"
        if isinstance(stmt, ast.VariableShowStmt):
            return f"SHOW {stmt.name}"
        if isinstance(stmt, ast.CreateStmt):
            return "CREATE TABLE"
        if isinstance(stmt, ast.IndexStmt):
            return "CREATE UNIQUE INDEX" if stmt.unique else "CREATE INDEX"
        if isinstance(stmt, ast.ViewStmt):
            return "CREATE VIEW"
        if isinstance(stmt, ast.CreateSeqStmt):
            return "CREATE SEQUENCE"
        if isinstance(stmt, ast.DropStmt):
            obj = stmt.removeType.name.replace("OBJECT_", "")
            return f"DROP {obj}" + (" IF EXISTS" if stmt.missing_ok else "")
        if isinstance(stmt, ast.AlterTableStmt):
            subs = [c.subtype.name.replace("AT_", "") for c in stmt.cmds]
            return "ALTER TABLE " + ", ".join(subs)
        if isinstance(stmt, ast.DeallocateStmt):
            return "DEALLOCATE ALL" if stmt.name is None else "DEALLOCATE"
        return t

    # The walk: a SELECT opens a scope with the relations of its FROM; column references
    # resolve to the innermost scope with a relation that has the column.

    def walk(self, node, scope, f, ctes):
        if node is None:
            return
        if isinstance(node, (list, tuple)):
            for n in node:
                self.walk(n, scope, f, ctes)
            return
        if not isinstance(node, ast.Node):
            return
        if isinstance(node, ast.SelectStmt):
            self.select(node, scope, f, ctes)
            return
        if isinstance(node, (ast.InsertStmt, ast.UpdateStmt, ast.DeleteStmt)):
            inner = Scope(scope)
            if node.withClause is not None:
                ctes = self.with_clause(node.withClause, scope, f, ctes)
            self.range_var(node.relation, inner, f, ctes)
            for field in ("fromClause", "usingClause"):
                items = getattr(node, field, None)
                for item in items or ():
                    self.from_item(item, inner, f, ctes)
            for field in ("cols", "selectStmt", "targetList", "whereClause", "returningList", "returningClause", "onConflictClause"):
                value = getattr(node, field, None)
                if field == "selectStmt" and value is not None and value.valuesLists:
                    value = value.valuesLists  # INSERT ... VALUES: not a VALUES query
                self.walk(value, inner, f, ctes)
            if returning(node):
                f.syntax.add("RETURNING")
            return
        self.expression(node, scope, f, ctes)
        for name in node:
            if name in ("location",):
                continue
            self.walk(getattr(node, name), scope, f, ctes)

    def with_clause(self, w, scope, f, ctes):
        f.syntax.add("WITH RECURSIVE" if w.recursive else "WITH (CTE)")
        ctes = set(ctes) | {c.ctename for c in w.ctes}
        for c in w.ctes:
            self.walk(c.ctequery, scope, f, ctes)
        return ctes

    def select(self, s, parent, f, ctes):
        if s.withClause is not None:
            ctes = self.with_clause(s.withClause, parent, f, ctes)
        if s.op != enums.SetOperation.SETOP_NONE:
            f.syntax.add(s.op.name.replace("SETOP_", "") + (" ALL" if s.all else ""))
            self.select(s.larg, parent, f, ctes)
            self.select(s.rarg, parent, f, ctes)
            for field in ("sortClause", "limitCount", "limitOffset"):
                self.walk(getattr(s, field), parent, f, ctes)
            self.select_clauses(s, f)
            return
        if s.valuesLists:
            f.syntax.add("VALUES")
            self.walk(s.valuesLists, parent, f, ctes)
            return
        scope = Scope(parent)
        for item in s.fromClause or ():
            self.from_item(item, scope, f, ctes)
        if s.fromClause and len(s.fromClause) > 1:
            f.syntax.add("FROM a, b (comma join)")
        self.select_clauses(s, f)
        for field in (
            "targetList",
            "whereClause",
            "groupClause",
            "havingClause",
            "windowClause",
            "sortClause",
            "limitCount",
            "limitOffset",
            "distinctClause",
            "lockingClause",
        ):
            self.walk(getattr(s, field), scope, f, ctes)
        for target in s.targetList or ():
            v = target.val
            if isinstance(v, ast.FuncCall):
                name = names_of(v.funcname)[-1]
                if any(p["retset"] for p in self.functions.get(name, ())):
                    f.syntax.add("set-returning function in the select list")

    def select_clauses(self, s, f):
        if s.distinctClause is not None:
            f.syntax.add("DISTINCT ON" if any(d is not None for d in s.distinctClause) else "DISTINCT")
        if s.groupClause:
            f.syntax.add("GROUP BY")
        if s.havingClause is not None:
            f.syntax.add("HAVING")
        if s.sortClause:
            f.syntax.add("ORDER BY")
            for sb in s.sortClause:
                if isinstance(sb.node, ast.A_Const) and isinstance(sb.node.val, ast.Integer):
                    f.syntax.add("ORDER BY a column number")
                if sb.sortby_dir == enums.SortByDir.SORTBY_DESC:
                    f.syntax.add("ORDER BY ... DESC")
                if sb.sortby_nulls != enums.SortByNulls.SORTBY_NULLS_DEFAULT:
                    f.syntax.add("ORDER BY ... NULLS FIRST/LAST")
        if s.limitCount is not None:
            f.syntax.add("LIMIT")
        if s.limitOffset is not None:
            f.syntax.add("OFFSET")
        if s.lockingClause:
            f.syntax.add("FOR UPDATE/SHARE")

    def range_var(self, rv, scope, f, ctes):
        rel = self.catalog_relation(rv.schemaname, rv.relname, ctes)
        alias = rv.alias.aliasname if rv.alias is not None else rv.relname
        scope.names[alias] = rel
        if rel is not None:
            f.relations.add(rel)
            scope.catalog.append((alias, rel))
            if rv.schemaname is None:
                f.syntax.add("a catalog relation named without its schema (search_path)")
        if rv.alias is not None and rv.alias.colnames:
            f.syntax.add("column aliases in FROM: alias(a, b)")

    def from_item(self, item, scope, f, ctes):
        if isinstance(item, ast.RangeVar):
            self.range_var(item, scope, f, ctes)
        elif isinstance(item, ast.JoinExpr):
            kind = {
                enums.JoinType.JOIN_INNER: "JOIN (inner)",
                enums.JoinType.JOIN_LEFT: "LEFT JOIN",
                enums.JoinType.JOIN_RIGHT: "RIGHT JOIN",
                enums.JoinType.JOIN_FULL: "FULL JOIN",
            }[item.jointype]
            if item.quals is None and not item.usingClause and not item.isNatural:
                kind = "CROSS JOIN"
            f.syntax.add(kind)
            if item.usingClause:
                f.syntax.add("JOIN ... USING")
            self.from_item(item.larg, scope, f, ctes)
            self.from_item(item.rarg, scope, f, ctes)
            self.walk(item.quals, scope, f, ctes)
        elif isinstance(item, ast.RangeSubselect):
            f.syntax.add("LATERAL (subquery)" if item.lateral else "subquery in FROM")
            if item.subquery.valuesLists:
                f.syntax.add("VALUES in FROM")
            if item.alias is not None:
                scope.names[item.alias.aliasname] = None
                if item.alias.colnames:
                    f.syntax.add("column aliases in FROM: alias(a, b)")
            self.walk(item.subquery, scope if item.lateral else scope.parent or Scope(), f, ctes)
        elif isinstance(item, ast.RangeFunction):
            f.syntax.add("function in FROM")
            if item.lateral:
                f.syntax.add("LATERAL (function)")
            if item.ordinality:
                f.syntax.add("WITH ORDINALITY")
            if item.is_rowsfrom:
                f.syntax.add("ROWS FROM")
            if item.alias is not None:
                scope.names[item.alias.aliasname] = None
                if item.alias.colnames:
                    f.syntax.add("column aliases in FROM: alias(a, b)")
            for fn in item.functions:
                self.walk(fn[0], scope, f, ctes)
        else:
            self.walk(item, scope, f, ctes)

    def resolve(self, fields, scope, f):
        if any(isinstance(x, ast.A_Star) for x in fields):
            names = names_of(fields)
            s = scope
            while s is not None:
                targets = [rel for alias, rel in s.catalog if not names or alias == names[-1]]
                for rel in targets:
                    f.columns[rel].add("*")
                if targets or s.catalog:
                    break
                s = s.parent
            return
        names = names_of(fields)
        col = names[-1]
        if len(names) == 1:
            s = scope
            while s is not None:
                owners = [rel for _, rel in s.catalog if col in self.columns.get(rel, ())]
                if owners:
                    f.columns[owners[0]].add(col)
                    return
                s = s.parent
            return
        qual = names[-2]
        s = scope
        while s is not None:
            if qual in s.names:
                rel = s.names[qual]
                if rel is not None:
                    f.columns[rel].add(col)
                return
            s = s.parent

    def expression(self, node, scope, f, ctes):
        if isinstance(node, ast.ColumnRef):
            self.resolve(node.fields, scope, f)
        elif isinstance(node, ast.FuncCall):
            names = names_of(node.funcname)
            name = names[-1]
            qualified = len(names) > 1 and names[0] != "pg_catalog"
            label = ".".join(names) if qualified else name
            if node.agg_star:
                f.functions[f"{label}(*)"] += 1
            else:
                f.functions[f"{label}/{len(node.args or ())}"] += 1
            kinds = {p["kind"] for p in self.functions.get(name, ())}
            if node.over is not None:
                f.syntax.add("window function: OVER (PARTITION BY ... ORDER BY ...)")
            elif "a" in kinds:
                f.syntax.add("aggregate")
            if node.agg_order:
                f.syntax.add("aggregate with ORDER BY inside: agg(x ORDER BY y)")
            if node.agg_distinct:
                f.syntax.add("aggregate over DISTINCT")
            if node.agg_filter is not None:
                f.syntax.add("aggregate FILTER (WHERE ...)")
            if node.funcformat == enums.CoercionForm.COERCE_SQL_SYNTAX:
                f.syntax.add(f"SQL-syntax function: {name}")
        elif isinstance(node, ast.A_Expr):
            op = ".".join(names_of(node.name)) if node.name else ""
            k = node.kind
            if k == enums.A_Expr_Kind.AEXPR_OP:
                if len(names_of(node.name)) > 1:
                    f.operators.add(f"OPERATOR({op})")
                else:
                    f.operators.add(op if node.lexpr is not None else f"prefix {op}")
            elif k == enums.A_Expr_Kind.AEXPR_OP_ANY:
                f.operators.add(f"{op} ANY (array)")
            elif k == enums.A_Expr_Kind.AEXPR_OP_ALL:
                f.operators.add(f"{op} ALL (array)")
            elif k == enums.A_Expr_Kind.AEXPR_IN:
                f.operators.add("NOT IN (list)" if op == "<>" else "IN (list)")
            elif k == enums.A_Expr_Kind.AEXPR_LIKE:
                escape = isinstance(node.rexpr, ast.FuncCall) and names_of(node.rexpr.funcname)[-1] == "like_escape"
                f.operators.add(("NOT LIKE" if op == "!~~" else "LIKE") + (" ... ESCAPE" if escape else ""))
            elif k == enums.A_Expr_Kind.AEXPR_ILIKE:
                f.operators.add("ILIKE")
            elif k == enums.A_Expr_Kind.AEXPR_SIMILAR:
                f.operators.add("SIMILAR TO")
            elif k in (enums.A_Expr_Kind.AEXPR_BETWEEN, enums.A_Expr_Kind.AEXPR_NOT_BETWEEN):
                f.operators.add("BETWEEN")
            elif k == enums.A_Expr_Kind.AEXPR_DISTINCT:
                f.operators.add("IS DISTINCT FROM")
            elif k == enums.A_Expr_Kind.AEXPR_NOT_DISTINCT:
                f.operators.add("IS NOT DISTINCT FROM")
            elif k == enums.A_Expr_Kind.AEXPR_NULLIF:
                f.syntax.add("NULLIF")
            else:
                f.operators.add(k.name)
        elif isinstance(node, ast.TypeCast):
            tn = node.typeName
            names = names_of(tn.names)
            name = names[-1]
            if tn.typmods:
                name += "(n)"
            if tn.arrayBounds:
                name += "[]"
            f.casts.add(name)
            if isinstance(node.arg, ast.A_Const) and isinstance(node.arg.val, ast.String) and name.startswith("reg"):
                f.syntax.add("a name cast to an OID type: 'name'::regclass")
        elif isinstance(node, ast.SubLink):
            t = node.subLinkType
            label = {
                enums.SubLinkType.EXISTS_SUBLINK: "EXISTS (subquery)",
                enums.SubLinkType.EXPR_SUBLINK: "scalar subquery",
                enums.SubLinkType.ANY_SUBLINK: "IN (subquery) / op ANY (subquery)",
                enums.SubLinkType.ALL_SUBLINK: "op ALL (subquery)",
                enums.SubLinkType.ARRAY_SUBLINK: "ARRAY(subquery)",
            }.get(t, t.name)
            f.syntax.add(label)
        elif isinstance(node, ast.A_ArrayExpr):
            f.syntax.add("ARRAY[...] constructor")
        elif isinstance(node, ast.A_Indirection):
            for ind in node.indirection:
                if isinstance(ind, ast.A_Indices):
                    f.syntax.add("array slice a[i:j]" if ind.is_slice else "array subscript a[i]")
                elif isinstance(ind, ast.String):
                    f.syntax.add("field of a composite: (f(x)).field")
        elif isinstance(node, ast.CaseExpr):
            f.syntax.add("CASE x WHEN (simple CASE)" if node.arg is not None else "CASE WHEN (searched CASE)")
        elif isinstance(node, ast.CoalesceExpr):
            f.syntax.add("COALESCE")
        elif isinstance(node, ast.MinMaxExpr):
            f.syntax.add("GREATEST/LEAST")
        elif isinstance(node, ast.NullTest):
            f.syntax.add("IS [NOT] NULL")
        elif isinstance(node, ast.BooleanTest):
            f.syntax.add("IS [NOT] TRUE/FALSE")
        elif isinstance(node, ast.CollateClause):
            f.syntax.add("COLLATE " + ".".join(names_of(node.collname)))
        elif isinstance(node, ast.ParamRef):
            f.syntax.add("parameters ($n)")
        elif isinstance(node, ast.SQLValueFunction):
            f.syntax.add("SQL value function: " + node.op.name.replace("SVFOP_", ""))
        elif isinstance(node, ast.RowExpr):
            f.syntax.add("ROW(...)")
        elif isinstance(node, ast.BoolExpr):
            if node.boolop == enums.BoolExprType.NOT_EXPR:
                f.syntax.add("NOT")
        elif isinstance(node, ast.WindowDef) and node.name:
            f.syntax.add("WINDOW clause")


# --------------------------------------------------------------------------------------
# redodb: the replay and the probes


def connect(port, user, app):
    import psycopg

    return psycopg.connect(
        host="127.0.0.1", port=port, user=user, dbname="redodb", autocommit=True, application_name=app, connect_timeout=10
    )


def outcome_of(pgconn, result, pq):
    status = result.status
    if status == pq.ExecStatus.TUPLES_OK:
        return f"ok: {result.ntuples} rows"
    if status == pq.ExecStatus.COMMAND_OK:
        tag = (result.command_status or b"").decode()
        return f"ok: {tag}"
    if status == pq.ExecStatus.EMPTY_QUERY:
        return "ok: empty query"
    code = (result.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode()
    msg = (result.error_field(pq.DiagnosticField.MESSAGE_PRIMARY) or b"").decode()
    if not code:
        msg = pgconn.error_message.decode(errors="replace").strip()
    return f"ERROR {code}: {msg}"


def param_bytes(p):
    if p is None:
        return None
    if "text" in p:
        return p["text"].encode()
    return bytes.fromhex(p["hex"])


USERS = {"sqlalchemy": "sqlalchemy", "jdbc": "jdbc", "psql": "psql"}


def replay(port, executions, statements):
    """Runs every execution in the order captured, one connection per step."""
    from psycopg import pq

    conns = {}
    for e in executions:
        if e["fetch"]:
            continue
        app = e["app"]
        client = app.split("/")[0]
        if app not in conns:
            conns[app] = connect(port, USERS[client], app)
        pgconn = conns[app].pgconn
        sql = e["sql"].encode()
        if e["protocol"] == "simple":
            res = pgconn.exec_(sql)
        else:
            n = len(e["params"])
            formats = e["param_formats"]
            formats = formats * n if len(formats) == 1 else (formats or [0] * n)
            types = list(e["param_types"]) + [0] * (n - len(e["param_types"]))
            rf = e["result_formats"]
            result_format = 1 if rf and all(x == 1 for x in rf) else 0
            res = pgconn.exec_params(sql, [param_bytes(p) for p in e["params"]], types or None, formats or None, result_format)
        out = outcome_of(pgconn, res, pq)
        st = statements.get((client, e["sql"]))
        if st is not None:
            st.replay[out] += 1
            if out.startswith("ok") and e["pg"].startswith("ok") and out != e["pg"] and "rows" in e["pg"]:
                st.differs[f"PostgreSQL `{e['pg']}`, redodb `{out}`"] += 1
            if out.startswith("ERROR"):
                if e["pg"].startswith("ERROR") and e["pg"].split(":")[0] == out.split(":")[0]:
                    st.same_errors += 1  # the error the judge provokes, as PostgreSQL answered it
                else:
                    st.new_errors[out] += 1
        if pgconn.transaction_status == pq.TransactionStatus.INERROR:
            pgconn.exec_(b"ROLLBACK")
    for c in conns.values():
        c.close()


# Each feature alone, on redodb's own tables where it needs one: ok means redodb has it.
# The setup makes the probe table; a probe is one statement.
PROBE_SETUP = [
    "DROP TABLE IF EXISTS probe_t",
    "CREATE TABLE probe_t (k INTEGER PRIMARY KEY, s TEXT, n INTEGER)",
    "INSERT INTO probe_t VALUES (1, 'a', 10), (2, 'b', 20), (3, NULL, 30)",
]

PROBES = {
    # Syntax.
    "WITH (CTE)": "WITH w AS (SELECT k FROM probe_t) SELECT k FROM w",
    "WITH RECURSIVE": "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 3) SELECT x FROM r",
    "UNION": "SELECT k FROM probe_t UNION SELECT n FROM probe_t",
    "UNION ALL": "SELECT k FROM probe_t UNION ALL SELECT n FROM probe_t",
    "VALUES": "VALUES (1, 'a'), (2, 'b')",
    "VALUES in FROM": "SELECT x FROM (VALUES (1), (2)) AS v(x)",
    "subquery in FROM": "SELECT q.k FROM (SELECT k FROM probe_t) AS q",
    "LATERAL (subquery)": "SELECT a.k, b.m FROM probe_t a, LATERAL (SELECT a.n * 2 AS m) b",
    "LATERAL (function)": "SELECT a.k, x FROM probe_t a, LATERAL unnest(ARRAY[a.n, a.k]) AS x",
    "function in FROM": "SELECT * FROM generate_series(1, 3) AS g",
    "WITH ORDINALITY": "SELECT * FROM unnest(ARRAY['a', 'b']) WITH ORDINALITY AS u(x, n)",
    "column aliases in FROM: alias(a, b)": "SELECT p.a, p.b FROM probe_t AS p(a, b)",
    "JOIN (inner)": "SELECT a.k FROM probe_t a JOIN probe_t b ON a.k = b.k",
    "LEFT JOIN": "SELECT a.k FROM probe_t a LEFT JOIN probe_t b ON a.k = b.n",
    "CROSS JOIN": "SELECT a.k FROM probe_t a CROSS JOIN probe_t b",
    "FROM a, b (comma join)": "SELECT a.k FROM probe_t a, probe_t b WHERE a.k = b.k",
    "scalar subquery": "SELECT (SELECT max(k) FROM probe_t)",
    "EXISTS (subquery)": "SELECT k FROM probe_t a WHERE EXISTS (SELECT 1 FROM probe_t b WHERE b.k = a.k)",
    "IN (subquery) / op ANY (subquery)": "SELECT k FROM probe_t WHERE k IN (SELECT k FROM probe_t)",
    "ARRAY(subquery)": "SELECT ARRAY(SELECT k FROM probe_t ORDER BY k)",
    "ARRAY[...] constructor": "SELECT ARRAY[1, 2, 3]",
    "array subscript a[i]": "SELECT (ARRAY[10, 20, 30])[2]",
    "field of a composite: (f(x)).field": "SELECT (information_schema._pg_expandarray(ARRAY[5, 6])).n",
    "CASE x WHEN (simple CASE)": "SELECT CASE k WHEN 1 THEN 'one' ELSE 'other' END FROM probe_t",
    "CASE WHEN (searched CASE)": "SELECT CASE WHEN k = 1 THEN 'one' END FROM probe_t",
    "COALESCE": "SELECT COALESCE(s, 'none') FROM probe_t",
    "NULLIF": "SELECT NULLIF(s, 'a') FROM probe_t",
    "IS [NOT] NULL": "SELECT k FROM probe_t WHERE s IS NULL",
    "NOT": "SELECT k FROM probe_t WHERE NOT (k = 1)",
    "COLLATE pg_catalog.default": "SELECT k FROM probe_t WHERE s = 'a' COLLATE pg_catalog.default",
    "GENERATED ... AS IDENTITY": "CREATE TABLE probe_ty (k INTEGER GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY)",
    "GENERATED ... AS IDENTITY (sequence options)": (
        "CREATE TABLE probe_ty (k BIGINT GENERATED BY DEFAULT AS IDENTITY (INCREMENT BY 1 START WITH 1000) PRIMARY KEY)"
    ),
    "GROUP BY": "SELECT s, count(*) FROM probe_t GROUP BY s",
    "HAVING": "SELECT s FROM probe_t GROUP BY s HAVING count(*) > 0",
    "ORDER BY": "SELECT k FROM probe_t ORDER BY s",
    "ORDER BY a column number": "SELECT k, s FROM probe_t ORDER BY 2, 1",
    "ORDER BY ... DESC": "SELECT k FROM probe_t ORDER BY k DESC",
    "LIMIT": "SELECT k FROM probe_t LIMIT 1",
    "OFFSET": "SELECT k FROM probe_t LIMIT 1 OFFSET 1",
    "aggregate": "SELECT count(*), min(k) FROM probe_t",
    "aggregate with ORDER BY inside: agg(x ORDER BY y)": "SELECT array_agg(k ORDER BY k DESC) FROM probe_t",
    "window function: OVER (PARTITION BY ... ORDER BY ...)": "SELECT row_number() OVER (PARTITION BY s ORDER BY k) FROM probe_t",
    "set-returning function in the select list": "SELECT unnest(ARRAY[1, 2])",
    "a catalog relation named without its schema (search_path)": "SELECT typname FROM pg_type LIMIT 1",
    "a name cast to an OID type: 'name'::regclass": "SELECT 'probe_t'::regclass",
    "SQL-syntax function: btrim": "SELECT trim(both '\"' from '\"x\"')",
    "RETURNING": "UPDATE probe_t SET n = n WHERE k = 1 RETURNING k",
    "SQL value function: CURRENT_USER": "SELECT CURRENT_USER",
    # Operators.
    "=": "SELECT k FROM probe_t WHERE k = 1",
    "<>": "SELECT k FROM probe_t WHERE k <> 1",
    "!=": "SELECT k FROM probe_t WHERE k != 1",
    ">": "SELECT k FROM probe_t WHERE k > 1",
    "<": "SELECT k FROM probe_t WHERE k < 1",
    ">=": "SELECT k FROM probe_t WHERE k >= 1",
    "+": "SELECT k + 1 FROM probe_t",
    "-": "SELECT k - 1 FROM probe_t",
    "*": "SELECT k * 2 FROM probe_t",
    "||": "SELECT s || 'x' FROM probe_t",
    "&": "SELECT k & 1 FROM probe_t",
    "~": "SELECT k FROM probe_t WHERE s ~ '^a'",
    "!~": "SELECT k FROM probe_t WHERE s !~ '^a'",
    "OPERATOR(pg_catalog.~)": "SELECT k FROM probe_t WHERE s OPERATOR(pg_catalog.~) '^(a)$'",
    "= ANY (array)": "SELECT k FROM probe_t WHERE k = ANY (ARRAY[1, 2])",
    "IN (list)": "SELECT k FROM probe_t WHERE k IN (1, 2)",
    "LIKE": "SELECT k FROM probe_t WHERE s LIKE 'a%'",
    "NOT LIKE ... ESCAPE": "SELECT k FROM probe_t WHERE s NOT LIKE 'pg/_%' ESCAPE '/'",
    "BETWEEN": "SELECT k FROM probe_t WHERE k BETWEEN 1 AND 2",
}

# A function's probe: a call with arguments of the right types (on redodb's own objects
# where it needs one). Functions without a probe here are reported as not probed.
FUNCTION_PROBES = {
    "version/0": "SELECT pg_catalog.version()",
    "current_schema/0": "SELECT current_schema()",
    "current_setting/1": "SELECT current_setting('default_table_access_method')",
    "to_regtype/1": "SELECT to_regtype('hstore')",
    "now/0": "SELECT now()",
    "count(*)": "SELECT count(*) FROM probe_t",
    "count/1": "SELECT count(k) FROM probe_t",
    "sum/1": "SELECT sum(k) FROM probe_t",
    "min/1": "SELECT min(k) FROM probe_t",
    "octet_length/1": "SELECT octet_length('abc'::bytea)",
    "array_agg/1": "SELECT array_agg(k) FROM probe_t",
    "unnest/1": "SELECT unnest(ARRAY[1, 2])",
    "generate_subscripts/2": "SELECT generate_subscripts(ARRAY[1, 2], 1)",
    "generate_series/2": "SELECT * FROM generate_series(0, 2)",
    "array_upper/2": "SELECT array_upper(ARRAY[1, 2], 1)",
    "array_to_string/2": "SELECT array_to_string(ARRAY['a', 'b'], ',')",
    "string_agg/2": "SELECT string_agg(s, ', ') FROM probe_t",
    "row_number/0": "SELECT row_number() OVER () FROM probe_t",
    "json_build_object/4": "SELECT json_build_object('a', 1, 'b', 2)",
    "btrim/2": "SELECT trim(both '\"' from '\"x\"')",
    "like_escape/2": "SELECT 'a_b' LIKE 'a/_b' ESCAPE '/'",
    "format_type/2": "SELECT pg_catalog.format_type(23, -1)",
    "pg_table_is_visible/1": "SELECT pg_catalog.pg_table_is_visible('probe_t'::regclass)",
    "pg_get_expr/2": "SELECT pg_catalog.pg_get_expr(NULL, 'probe_t'::regclass)",
    "pg_get_expr/3": "SELECT pg_catalog.pg_get_expr(NULL, 'probe_t'::regclass, true)",
    "pg_get_indexdef/1": "SELECT pg_catalog.pg_get_indexdef('probe_t_pkey'::regclass)",
    "pg_get_indexdef/3": "SELECT pg_catalog.pg_get_indexdef('probe_t_pkey'::regclass, 1, false)",
    "pg_get_constraintdef/1": "SELECT pg_catalog.pg_get_constraintdef(0)",
    "pg_get_constraintdef/2": "SELECT pg_catalog.pg_get_constraintdef(0, true)",
    "pg_get_userbyid/1": "SELECT pg_catalog.pg_get_userbyid(10)",
    "pg_get_serial_sequence/2": "SELECT pg_catalog.pg_get_serial_sequence('probe_t', 'k')",
    "pg_collation_is_visible/1": "SELECT pg_catalog.pg_collation_is_visible(100)",
    "pg_partition_ancestors/1": "SELECT * FROM pg_catalog.pg_partition_ancestors('probe_t'::regclass)",
    "pg_relation_is_publishable/1": "SELECT pg_catalog.pg_relation_is_publishable('probe_t'::regclass)",
    "pg_get_statisticsobjdef_columns/1": "SELECT pg_catalog.pg_get_statisticsobjdef_columns(0)",
    "pg_get_triggerdef/2": "SELECT pg_catalog.pg_get_triggerdef(0, true)",
    "col_description/2": "SELECT pg_catalog.col_description('probe_t'::regclass, 1)",
    "obj_description/2": "SELECT pg_catalog.obj_description('probe_t'::regclass, 'pg_class')",
    "information_schema._pg_expandarray/1": "SELECT (information_schema._pg_expandarray(ARRAY[5, 6])).n",
    "current_schemas/1": "SELECT current_schemas(true)",
    "set_config/3": "SELECT set_config('application_name', 'probe', false)",
    "pg_encoding_to_char/1": "SELECT pg_encoding_to_char(6)",
    "has_table_privilege/2": "SELECT has_table_privilege('probe_t', 'SELECT')",
    "bool_and/1": "SELECT bool_and(k > 0) FROM probe_t",
    "json_build_object/14": "SELECT json_build_object('a', 1, 'b', 2, 'c', 3, 'd', 4, 'e', 5, 'f', 6, 'g', 7)",
}

# A statement kind's probe: statements run in order, the last one's answer counts; then
# the cleanup (whose answers do not).
STATEMENT_PROBES = {
    "SELECT": ["SELECT k FROM probe_t"],
    "INSERT": ["INSERT INTO probe_t VALUES (100, 'x', 1)"],
    "INSERT ... RETURNING": ["INSERT INTO probe_t VALUES (101, 'x', 1) RETURNING k"],
    "INSERT ... SELECT ... RETURNING": ["INSERT INTO probe_t SELECT k + 200, s, n FROM probe_t WHERE k = 1 RETURNING k"],
    "UPDATE": ["UPDATE probe_t SET n = n WHERE k = 1"],
    "UPDATE ... RETURNING": ["UPDATE probe_t SET n = n WHERE k = 1 RETURNING n"],
    "DELETE": ["DELETE FROM probe_t WHERE k >= 100"],
    "BEGIN": ["BEGIN", "COMMIT"],
    "COMMIT": ["BEGIN", "COMMIT"],
    "ROLLBACK": ["BEGIN", "ROLLBACK"],
    "SAVEPOINT": ["BEGIN", "SAVEPOINT p1", "ROLLBACK"],
    "RELEASE": ["BEGIN", "SAVEPOINT p1", "RELEASE p1", "ROLLBACK"],
    "SET extra_float_digits": ["SET extra_float_digits = 3"],
    "SET application_name": ["SET application_name = 'probe'"],
    "SHOW transaction_isolation": ["SHOW transaction isolation level"],
    "SHOW standard_conforming_strings": ["SHOW standard_conforming_strings"],
    "DEALLOCATE ALL": ["DEALLOCATE ALL"],
    "CREATE TABLE": ["CREATE TABLE probe_c (k INTEGER PRIMARY KEY)", "DROP TABLE probe_c"],
    "CREATE INDEX": ["CREATE INDEX probe_i ON probe_t (n)", "DROP INDEX probe_i"],
    "CREATE UNIQUE INDEX": ["CREATE UNIQUE INDEX probe_i ON probe_t (n)", "DROP INDEX probe_i"],
    "CREATE VIEW": ["CREATE VIEW probe_v AS SELECT k FROM probe_t", "DROP VIEW probe_v"],
    "CREATE SEQUENCE": ["CREATE SEQUENCE probe_s", "DROP SEQUENCE probe_s"],
    "DROP TABLE": ["CREATE TABLE probe_c (k INTEGER PRIMARY KEY)", "DROP TABLE probe_c"],
    "DROP TABLE IF EXISTS": ["DROP TABLE IF EXISTS probe_none"],
    "DROP INDEX": ["CREATE INDEX probe_i ON probe_t (n)", "DROP INDEX probe_i"],
    "DROP SEQUENCE": ["CREATE SEQUENCE probe_s", "DROP SEQUENCE probe_s"],
    "DROP VIEW": ["CREATE VIEW probe_v AS SELECT k FROM probe_t", "DROP VIEW probe_v"],
    "DROP VIEW IF EXISTS": ["DROP VIEW IF EXISTS probe_none"],
    "ALTER TABLE AddColumn": ["ALTER TABLE probe_t ADD COLUMN extra INTEGER", "ALTER TABLE probe_t DROP COLUMN extra"],
    "ALTER TABLE DropColumn": ["ALTER TABLE probe_t ADD COLUMN extra INTEGER", "ALTER TABLE probe_t DROP COLUMN extra"],
    "ALTER TABLE AddConstraint": [
        "ALTER TABLE probe_t ADD CONSTRAINT probe_fk FOREIGN KEY (k) REFERENCES probe_t (k)",
        "ALTER TABLE probe_t DROP CONSTRAINT probe_fk",
    ],
    "ALTER TABLE DropConstraint": [
        "ALTER TABLE probe_t ADD CONSTRAINT probe_ck CHECK (n > 0)",
        "ALTER TABLE probe_t DROP CONSTRAINT probe_ck",
    ],
}
STATEMENT_CLEANUP = [
    "DROP TABLE IF EXISTS probe_c",
    "DROP SEQUENCE IF EXISTS probe_s",
    "DELETE FROM probe_t WHERE k >= 100",
]

# A column type's probe: a table with a column of it.
TYPE_PROBE = "CREATE TABLE probe_ty (k INTEGER PRIMARY KEY, v {})"
TYPE_NAMES_SQL = {"int4": "INTEGER", "int8": "BIGINT", "int2": "SMALLINT", "timestamptz": "TIMESTAMPTZ", "bool": "BOOLEAN"}

CAST_PROBES = {
    "regclass": "SELECT 'probe_t'::regclass",
    "regtype": "SELECT 23::regtype",
    "regnamespace": "SELECT 2200::regnamespace",
    "regproc": "SELECT 'now'::regproc",
    "oid": "SELECT 23::oid",
    "text": "SELECT 23::text",
    "int2[]": "SELECT '{1,2}'::int2[]",
    "int8": "SELECT 23::int8",
    "int4": "SELECT '23'::int4",
    "int2": "SELECT '23'::int2",
    "varchar": "SELECT 23::varchar",
    "varchar(n)": "SELECT 'abc'::varchar(2)",
    "name": "SELECT 'abc'::name",
    "numeric(n)": "SELECT 1.234::numeric(10, 2)",
    "timestamptz": "SELECT '2024-01-01 00:00:00+00'::timestamptz",
    "bool": "SELECT 'true'::bool",
}


def cleanup_count(key, sql):
    """How many of a list probe's last statements only clean up after it: a statement
    probe of CREATE x ends with the DROP that removes x (and is itself the probe of DROP x,
    whose setup is the CREATE)."""
    if key[0] != "statement" or len(sql) < 2:
        return 0
    kind = key[1]
    if kind.startswith(("CREATE", "ALTER TABLE Add")) or kind in ("BEGIN", "SAVEPOINT"):
        return 1
    return 0


def probe_all(port, needed):
    """Runs the probe of each needed feature; returns feature -> outcome."""
    from psycopg import pq

    conn = connect(port, "psql", "catalog-queries/probe")
    pg = conn.pgconn
    for sql in PROBE_SETUP:
        r = outcome_of(pg, pg.exec_(sql.encode()), pq)
        assert r.startswith("ok"), (sql, r)
    out = {}
    for key, sql in needed:
        if sql is None:
            continue
        sql = sql if isinstance(sql, str) else list(sql)
        run = [sql] if isinstance(sql, str) else sql[: len(sql) - cleanup_count(key, sql)]
        cleanup = [] if isinstance(sql, str) else sql[len(run) :]
        outcome = None
        for one in run:
            outcome = outcome_of(pg, pg.exec_(one.encode()), pq)
            if not outcome.startswith("ok"):
                break
        out[key] = ("; ".join(run), outcome)
        for one in cleanup + (STATEMENT_CLEANUP if key[0] == "statement" else []) + ["DROP TABLE IF EXISTS probe_ty"]:
            pg.exec_(one.encode())
        if pg.transaction_status != pq.TransactionStatus.IDLE:
            pg.exec_(b"ROLLBACK")
    out[("syntax", "parameters ($n)")] = ("(every extended-protocol execution of the replay)", "ok")
    pg.exec_(b"DROP TABLE IF EXISTS probe_t")
    conn.close()
    return out


PSQL_SCHEMA = [
    "CREATE TABLE p (id integer PRIMARY KEY, name text)",
    "CREATE TABLE t (id integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, code varchar(10) NOT NULL,"
    " p_id integer REFERENCES p (id), qty integer CHECK (qty >= 0), note text DEFAULT 'none', UNIQUE (code))",
    "CREATE INDEX t_p_id_idx ON t (p_id)",
    "CREATE TABLE c (id integer PRIMARY KEY, t_id integer REFERENCES t (id) ON DELETE CASCADE)",
    "CREATE SEQUENCE s",
    "CREATE VIEW v AS SELECT id, code FROM t",
]
PSQL_DROP = ["DROP VIEW IF EXISTS v", "DROP SEQUENCE IF EXISTS s", "DROP TABLE IF EXISTS c", "DROP TABLE IF EXISTS t", "DROP TABLE IF EXISTS p"]
PSQL_COMMANDS = ["\\d t", "\\d+ t", "\\dt", "\\di", "\\ds", "\\dv"]


def run_clients(port, repo):
    """The clients themselves against redodb: the two judges, and psql's commands on the
    capture's schema (each statement of it alone, so that one refused does not stop the
    rest). Returns (title, output) pairs."""
    import subprocess
    import tempfile

    def run(cmd, timeout=300):
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr

    out = []
    status, text = run(["python3", f"{repo}/cli/tests/clients/sqlalchemy_judge.py", "--port", str(port)])
    out.append((f"sqlalchemy_judge.py --port PORT (exit {status})", summarize_judge(text)))
    jar = "/usr/share/java/postgresql.jar"
    with tempfile.TemporaryDirectory() as classes:
        status, text = run(["javac", "-d", classes, "-cp", jar, f"{repo}/cli/tests/clients/JdbcMetadataJudge.java"])
        assert status == 0, text
        status, text = run(["java", "-cp", f"{classes}:{jar}", "JdbcMetadataJudge", str(port)])
        out.append((f"java JdbcMetadataJudge PORT (exit {status})", summarize_judge(text)))
    psql = ["psql", "-X", "-h", "127.0.0.1", "-p", str(port), "-U", "psql", "-d", "redodb"]
    lines = []
    for sql in PSQL_DROP + PSQL_SCHEMA:
        status, text = run(psql + ["-c", sql])
        lines.append(f"$ psql -c {sql!r}\n{text.rstrip()}")
    for command in PSQL_COMMANDS:
        status, text = run(psql + ["-c", command])
        lines.append(f"$ psql -c '{command}'   (exit {status})\n{text.rstrip()}")
    for sql in PSQL_DROP:
        run(psql + ["-c", sql])
    out.append(("psql 15", "\n\n".join(lines)))
    return out


def summarize_judge(text):
    """A judge's output with each failure cut to its first lines (the assertion or the
    error, and where it was raised)."""
    keep = []
    tail = 0
    for line in text.splitlines():
        if line.startswith(("ok ", "FAILED", "PgJDBC", "SQLAlchemy", "Exception in thread")) or " checks run of " in line:
            keep.append(line)
            tail = 1 if line.startswith("FAILED") else 0
            continue
        if tail and (line.startswith(("AssertionError", "java.lang.AssertionError", "org.postgresql", "sqlalchemy.exc", "psycopg"))
                     or "Error:" in line or "Exception" in line):
            keep.append("    " + line.strip()[:400])
            tail = 0
    return "\n".join(keep)


# --------------------------------------------------------------------------------------
# The report

# SQL features a catalog is often assumed to need: the report says which of them no
# captured statement uses.
NOTABLE = [
    "WITH (CTE)",
    "WITH RECURSIVE",
    "LATERAL (subquery)",
    "LATERAL (function)",
    "ROWS FROM",
    "DISTINCT",
    "DISTINCT ON",
    "FULL JOIN",
    "RIGHT JOIN",
    "JOIN ... USING",
    "INTERSECT",
    "EXCEPT",
    "WINDOW clause",
    "aggregate FILTER (WHERE ...)",
    "array slice a[i:j]",
    "GREATEST/LEAST",
    "COALESCE",
    "IS DISTINCT FROM",
    "FOR UPDATE/SHARE",
]

TYPE_NAMES = {
    0: "unspecified",
    16: "bool",
    17: "bytea",
    20: "int8",
    21: "int2",
    23: "int4",
    25: "text",
    26: "oid",
    700: "float4",
    701: "float8",
    1005: "int2[]",
    1007: "int4[]",
    1009: "text[]",
    1015: "varchar[]",
    1016: "int8[]",
    1043: "varchar",
    1082: "date",
    1083: "time",
    1114: "timestamp",
    1184: "timestamptz",
    1700: "numeric",
    2950: "uuid",
}



def tokens(text):
    return re.findall(r"\s+|\w+|[^\w\s]", text)


def edits(base, other):
    """The token edits that turn `base` into `other`, as markdown list items."""
    a, b = tokens(base), tokens(other)
    out = []
    for op, i1, i2, j1, j2 in __import__("difflib").SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        before, after = "".join(a[i1:i2]), "".join(b[j1:j2])
        at = "".join(a[max(0, i1 - 6) : i1]).replace("\n", " ")
        out.append(f"after `…{code(at)}`: `{code(before) or '∅'}` → `{code(after) or '∅'}`")
    return out


def code(s):
    return s.replace("`", "ˋ")


def param_text(e, limit=60):
    parts = []
    for i, p in enumerate(e.get("params") or ()):
        t = e["param_types"][i] if i < len(e["param_types"]) else 0
        tname = TYPE_NAMES.get(t, str(t))
        if p is None:
            v = "NULL"
        elif "text" in p:
            v = repr(p["text"]) if len(p["text"]) <= limit else repr(p["text"][:limit]) + f"… ({len(p['text'])} chars)"
        else:
            h = p["hex"]
            v = f"binary 0x{h}" if len(h) <= limit else f"binary 0x{h[:limit]}… ({len(h) // 2} bytes)"
        parts.append(f"${i + 1} {tname} = {v}")
    return ", ".join(parts)


def features_line(f):
    bits = []
    for rel in sorted(f.relations):
        cols = ", ".join(sorted(f.columns.get(rel, ())))
        bits.append(f"`{rel[0]}.{rel[1]}`({cols})")
    out = []
    if bits:
        out.append("reads " + "; ".join(bits))
    if f.functions:
        out.append("functions " + ", ".join(f"`{k}`" for k in sorted(f.functions)))
    if f.operators:
        out.append("operators " + ", ".join(f"`{o}`" for o in sorted(f.operators)))
    if f.casts:
        out.append("casts " + ", ".join(f"`::{c}`" for c in sorted(f.casts)))
    syntax = sorted(s for s in f.syntax if s != "parameters ($n)")
    if syntax:
        out.append("syntax " + ", ".join(syntax))
    return "; ".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("capture")
    ap.add_argument("out")
    ap.add_argument("--redodb-port", type=int)
    ap.add_argument("--redodb-commit", default="")
    ap.add_argument("--repo", default=__import__("os").path.abspath(f"{__file__}/../../.."))
    args = ap.parse_args()

    steps = load_steps(args.capture)
    log = load_log(args.capture)
    wire = load_wire(args.capture)
    columns, relkinds, functions = load_catalog(args.capture)
    analyzer = Analyzer(columns, functions)

    # The statements of each client, deduplicated, in order of first use.
    statements = collections.OrderedDict()
    for e in log:
        if e["fetch"]:
            continue
        client, step = e["app"].split("/", 1)
        key = (client, e["text"])
        st = statements.get(key)
        if st is None:
            st = statements[key] = Statement(client, e["text"])
        st.executions += 1
        if step not in st.steps:
            st.steps.append(step)
    for e in wire:
        st = statements.get((e["app"].split("/")[0], e["sql"]))
        if st is not None and not e["fetch"]:
            st.wire.append(e)
            st.pg[e["pg"]] += 1

    # The two records agree: per step, the same statements the same number of times.
    agree = []
    for client, step, _status in steps:
        app = f"{client}/{step}"
        from_log = collections.Counter(e["text"] for e in log if e["app"] == app and not e["fetch"])
        from_wire = collections.Counter(e["sql"] for e in wire if e["app"] == app and not e["fetch"])
        agree.append((app, sum(from_log.values()), sum(from_wire.values()), from_log == from_wire))
    disagreements = [a for a in agree if not a[3]]
    if disagreements:
        print("the server's log and the proxy's record differ:", disagreements, file=sys.stderr)

    for st in statements.values():
        st.features = analyzer.analyze(st.text)
        try:
            st.fingerprint = pglast.parser.fingerprint(st.text)
        except pglast.parser.ParseError:
            st.fingerprint = st.text

    probes = {}
    replayed = False
    if args.redodb_port:
        replay(args.redodb_port, wire, statements)
        replayed = True
        needed = []
        for st in statements.values():
            f = st.features
            for s in f.syntax:
                needed.append((("syntax", s), PROBES.get(s, None if s not in PROBES else PROBES[s])))
            for o in f.operators:
                needed.append((("operator", o), PROBES.get(o)))
            for fn in f.functions:
                needed.append((("function", fn), FUNCTION_PROBES.get(fn)))
            for c in f.casts:
                needed.append((("cast", c), CAST_PROBES.get(c)))
            for k in f.statements:
                needed.append((("statement", k), tuple(STATEMENT_PROBES[k]) if k in STATEMENT_PROBES else None))
            for t in f.types:
                sql = TYPE_PROBE.format(TYPE_NAMES_SQL.get(t, t.upper()))
                needed.append((("type", t), sql))
        needed = list(dict.fromkeys(needed))
        probes = probe_all(args.redodb_port, needed)
        clients = run_clients(args.redodb_port, args.repo)
    else:
        clients = []

    write_report(args, steps, statements, agree, functions, relkinds, probes, replayed, clients)


def versions(capture):
    with open(f"{capture}/versions.tsv", encoding="utf-8") as f:
        return dict(line.rstrip("\n").split("\t", 1) for line in f if "\t" in line)


def count_by_client(sts):
    c = collections.Counter(st.client for st in sts)
    return ", ".join(f"{k} {c[k]}" for k in ("sqlalchemy", "jdbc", "psql") if c[k])


def write_report(args, steps, statements, agree, functions, relkinds, probes, replayed, clients):
    sts = list(statements.values())
    catalog_sts = [st for st in sts if st.features.relations]
    L = []
    w = L.append
    w("# The statements issue 20's catalog clients send, and what redodb answers")
    w("")
    v = versions(args.capture)
    w(
        "Generated by `scripts/catalog-queries/analyze.py` from a capture of "
        "`scripts/catalog-queries/capture.sh` (do not edit by hand; run both again). The clients "
        f"ran against PostgreSQL {v['PostgreSQL']} (Debian's postgresql-15) with `log_statement = 'all'`: "
        f"SQLAlchemy {v['SQLAlchemy']}, Alembic {v['Alembic']} and psycopg {v['psycopg']} "
        "(`cli/tests/clients/sqlalchemy_judge.py`), "
        f"PgJDBC {v['PgJDBC']} (`cli/tests/clients/JdbcMetadataJudge.java`) and psql {v['psql']} "
        "(`\\d t`, `\\d+ t`, `\\dt`, `\\di`, `\\ds`, `\\dv`), each step a process of its own "
        "with application_name CLIENT/STEP. All three pass on PostgreSQL 15; the server's version "
        "decides which queries psql, SQLAlchemy and PgJDBC send, and none of the three has a branch "
        "above 15, so redodb (which reports 16) gets the same ones."
    )
    w("")
    w("The capture, step by step (exit status of the client's process; PgJDBC's first step runs no check by design, status 1):")
    w("")
    w("| step | exit | executions (server log) | executions (proxy) | same statements |")
    w("|---|---|---|---|---|")
    status = {f"{c}/{s}": x for c, s, x in steps}
    for app, n_log, n_wire, same in agree:
        w(f"| `{app}` | {status[app]} | {n_log} | {n_wire} | {'yes' if same else '**no**'} |")
    w("")
    n_exec = sum(st.executions for st in sts)
    w(
        f"In all: {n_exec} executions, {len(sts)} distinct statement texts "
        f"({count_by_client(sts)}), of which {len(catalog_sts)} read pg_catalog or "
        f"information_schema ({count_by_client(catalog_sts)})."
    )
    w("")
    if replayed:
        w(
            f"redodb: `target/debug/redodb serve` built from {args.redodb_commit or 'this branch'}, a fresh data "
            "directory; every execution replayed in the captured order with the captured parameter types, "
            "formats and values (see analyze.py)."
        )
        w("")

    w(
        "How to read it: the summary tables count distinct statements (a text counted once however often it "
        "ran, per client); a statement's needs come from PostgreSQL's own parse tree, its columns resolved through "
        "aliases and subquery scopes against PostgreSQL 15's catalog; 'redodb today' is what a probe of the feature "
        "alone answers on redodb, so a feature is told apart from the catalog relation the statement also reads. "
        "To reproduce: `cargo build -p redodb && scripts/catalog-queries/report.sh` (which runs capture.sh, then "
        "this against a fresh redodb)."
    )
    w("")

    # ---- summary: relations
    w("## What they read")
    w("")
    w("### Relations and the columns read of each")
    w("")
    w("Counts are distinct statements (a statement text counted once however often it ran).")
    w("")
    w("| relation | kind | statements (by client) | columns read |")
    w("|---|---|---|---|")
    rels = collections.defaultdict(list)
    cols = collections.defaultdict(set)
    for st in sts:
        for rel in st.features.relations:
            rels[rel].append(st)
            cols[rel] |= st.features.columns.get(rel, set())
    kind_names = {"r": "table", "v": "view", "m": "materialized view"}
    for rel in sorted(rels, key=lambda r: (-len(rels[r]), r)):
        k = kind_names.get(relkinds.get(rel), "?")
        w(f"| `{rel[0]}.{rel[1]}` | {k} | {len(rels[rel])} ({count_by_client(rels[rel])}) | {', '.join(f'`{c}`' for c in sorted(cols[rel]))} |")
    w("")

    # ---- functions
    w("### Functions")
    w("")
    w("`name/n`: called with n arguments. Kind from PostgreSQL 15's pg_proc: f function, a aggregate, w window; SRF: returns a set.")
    w("")
    w("| function | statements (by client) | PostgreSQL 15 signatures | redodb today |")
    w("|---|---|---|---|")
    fns = collections.defaultdict(list)
    for st in sts:
        for fn in st.features.functions:
            fns[fn].append(st)
    for fn in sorted(fns, key=lambda x: (-len(fns[x]), x)):
        if fn.endswith("(*)"):
            name, arity = fn[: -len("(*)")].split(".")[-1], 0
        else:
            name = fn.rsplit("/", 1)[0].split(".")[-1]
            arity = int(fn.rsplit("/", 1)[1])
        sigs = [p for p in functions.get(name, ()) if fits(p["args"], arity)]
        sig = "; ".join(
            f"{p['kind']}{' SRF' if p['retset'] else ''} `{name}({p['args']})` → {p['returns']}" for p in sigs
        ) or "(not in pg_catalog)"
        w(f"| `{fn}` | {len(fns[fn])} ({count_by_client(fns[fn])}) | {sig} | {probe_cell(probes, ('function', fn))} |")
    w("")

    # ---- operators, casts, syntax
    for title, attr, key in (
        ("Operators", "operators", "operator"),
        ("Casts", "casts", "cast"),
        ("SQL features", "syntax", "syntax"),
        ("Statements", "statements", "statement"),
        ("Column types (CREATE TABLE, ADD COLUMN)", "types", "type"),
    ):
        w(f"### {title}")
        w("")
        w(f"| {key} | statements (by client) | redodb today |")
        w("|---|---|---|")
        seen = collections.defaultdict(list)
        for st in sts:
            for x in getattr(st.features, attr):
                seen[x].append(st)
        for x in sorted(seen, key=lambda y: (-len(seen[y]), y)):
            label = f"`::{x}`" if key == "cast" else f"`{x}`" if key in ("operator", "type") else x
            w(f"| {label} | {len(seen[x])} ({count_by_client(seen[x])}) | {probe_cell(probes, (key, x))} |")
        w("")

    absent = [x for x in NOTABLE if not any(x in st.features.syntax for st in sts)]
    if absent:
        w("Not used by any statement of the capture: " + ", ".join(absent) + ".")
        w("")

    if replayed:
        write_redodb_summary(w, sts, rels, probes)
        w("### The clients themselves against redodb")
        w("")
        w(
            "The judges and psql run as users run them (the replay above goes on past errors; a client stops at "
            "its first). Each judge's failures are cut to the assertion or error and its first line."
        )
        w("")
        for title, text in clients:
            w(f"`{title}`:")
            w("")
            w("```")
            w(text)
            w("```")
            w("")

    # ---- the statements
    w("## The statements, by client and step")
    w("")
    w(
        "Each distinct statement once, under the step that sent it first, numbered in order of first use "
        "(S1, S2, ... per client). A statement whose parse tree equals an earlier one's but for its "
        "constants is shown as that one's edits. Parameters: the first execution's, with the type "
        "OID the client declared (unspecified: the server infers it); binary values in hex."
    )
    w("")
    titles = {
        "sqlalchemy": f"SQLAlchemy {v['SQLAlchemy']} + Alembic {v['Alembic']} over psycopg {v['psycopg']}",
        "jdbc": f"PgJDBC {v['PgJDBC']}",
        "psql": f"psql {v['psql']}",
    }
    for client in ("sqlalchemy", "jdbc", "psql"):
        w(f"### {titles[client]}")
        w("")
        mine = [st for st in sts if st.client == client]
        number = {id(st): i + 1 for i, st in enumerate(mine)}
        by_fp = {}
        for step in [s for c, s, _ in steps if c == client]:
            first = [st for st in mine if st.steps[0] == step]
            w(f"#### {client}/{step}: {len(first)} new statements")
            w("")
            for st in first:
                n = number[id(st)]
                head = f"**{client[0].upper()}{n}** · {st.features.kind} · ran {st.executions}× in {', '.join(st.steps)}"
                w(head)
                w("")
                if st.wire:
                    e = st.wire[0]
                    if e["protocol"] == "simple":
                        w("- simple query protocol")
                    else:
                        pt = param_text(e)
                        rf = e["result_formats"]
                        fmt = "results in binary" if rf and all(x == 1 for x in rf) else ("some results in binary" if 1 in rf else "results in text")
                        w(f"- extended protocol, {fmt}" + (f"; parameters: {pt}" if pt else ""))
                fl = features_line(st.features)
                if fl:
                    w(f"- needs: {fl}")
                w("- PostgreSQL: " + "; ".join(f"`{code(o)}`" + (f" ×{c}" if c > 1 else "") for o, c in st.pg.most_common()))
                if replayed:
                    w("- redodb: " + "; ".join(f"`{code(o)}`" + (f" ×{c}" if c > 1 else "") for o, c in st.replay.most_common()))
                    oid = re.search(r"'(\d{4,})'", st.text) if client == "psql" else None
                    for d, c in st.differs.items():
                        note = (
                            f" (the text names PostgreSQL's OID of t, {oid.group(1)}, which redodb's t does not have: "
                            "see psql itself against redodb)"
                            if oid
                            else ""
                        )
                        w(f"- **redodb's answer differs**: {d}" + (f" ×{c}" if c > 1 else "") + note)
                base = by_fp.get(st.fingerprint)
                changes = edits(base.text, st.text) if base is not None else []
                # Edits only where they are few: past that the whole text reads better.
                if base is not None and len(changes) <= 3:
                    w(f"- the text of {client[0].upper()}{number[id(base)]} with these edits:")
                    for e in changes:
                        w(f"  - {e}")
                    w("")
                else:
                    by_fp.setdefault(st.fingerprint, st)
                    w("")
                    w("```sql")
                    w(st.text)
                    w("```")
                    w("")
    # ---- what psql printed, the display a catalog must reproduce
    w(f"## What psql {v['psql']} printed on PostgreSQL {v['PostgreSQL']}")
    w("")
    for _client, step, _status in [x for x in steps if x[0] == "psql" and x[1].startswith("\\")]:
        name = {"\\d t": "d_t", "\\d+ t": "d_plus_t"}.get(step, step.lstrip("\\"))
        with open(f"{args.capture}/psql/{name}.txt", encoding="utf-8") as f:
            printed = f.read().split("\n", 1)[1]  # after the step's header line
        w(f"`{step}`:")
        w("")
        w("```")
        w(printed.rstrip())
        w("```")
        w("")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(L).rstrip() + "\n")


def fits(args, arity):
    """Whether a pg_proc signature (its identity arguments) takes `arity` arguments."""
    inputs = [a for a in args.split(", ") if a and not a.startswith("OUT ")]
    return len(inputs) == arity or any(a.startswith("VARIADIC ") for a in inputs)


def probe_cell(probes, key):
    if key not in probes:
        return "not probed" if probes else ""
    sql, outcome = probes[key]
    if outcome.startswith("ok"):
        return "ok"
    note = ""
    if "redodb's pg_catalog answers only" in outcome:
        note = " (the probe names a catalog schema, so server/src/catalog.rs refuses it before the SQL engine sees it)"
    return f"**missing**: `{code(outcome)}` (probe `{code(sql)}`){note}"


def label_of(st, sts):
    """A statement's number, as the statements section shows it (S3, J12, P4)."""
    mine = [x for x in sts if x.client == st.client]
    return f"{st.client[0].upper()}{mine.index(st) + 1}"


def write_redodb_summary(w, sts, rels, probes):
    w("## redodb today")
    w("")
    failed = [st for st in sts if st.new_errors]
    differ = [st for st in sts if st.differs and not st.new_errors]
    ok = [st for st in sts if st.replay and not st.new_errors and not st.differs]
    same = [st for st in ok if st.same_errors]
    answered = [st for st in sts if st.features.relations and not st.new_errors]
    w(
        f"Of the {len(sts)} distinct statements, {len(ok)} got on every execution the answer PostgreSQL gave, "
        f"as many rows or the same SQLSTATE ({count_by_client(ok)}; {len(same)} of them the errors the judges "
        f"provoke on purpose); {len(differ)} ran without an error but answered another number of rows "
        f"({count_by_client(differ)}: " + ", ".join(label_of(st, sts) for st in differ) + "); and "
        f"{len(failed)} failed at least once where PostgreSQL did not ({count_by_client(failed)})."
    )
    w("")
    w(
        f"The {len(answered)} statements that read the catalog without an error ({count_by_client(answered)}) were "
        "answered by `server/src/catalog.rs`, which recognises queries by their text (what the issue rejects), "
        "not by a catalog the SQL engine reads; "
        f"{len([st for st in answered if st.differs])} of them with another number of rows than PostgreSQL's."
    )
    w("")
    w(
        "redodb's errors where PostgreSQL had none, by message (distinct statements; the replay goes on after "
        "each, so a later statement may fail for an earlier one's reason, as a table that could not be created):"
    )
    w("")
    w("| error | statements (by client) |")
    w("|---|---|")
    errs = collections.defaultdict(list)
    for st in failed:
        for o in st.new_errors:
            errs[re.sub(r'"[^"]*"', '"…"', o)].append(st)
    for e in sorted(errs, key=lambda x: (-len(errs[x]), x)):
        w(f"| `{code(e)}` | {len(errs[e])} ({count_by_client(errs[e])}) |")
    w("")
    w("### Missing features, ranked by the statements that need them")
    w("")
    w(
        "A feature is missing when its probe (run alone on redodb, on a table of its own) fails; "
        "every pg_catalog and information_schema relation is missing (redodb has no catalog relations: "
        "each read fails or is answered by text matching). Counts are distinct statements."
    )
    w("")
    w("| rank | feature | statements (by client) | redodb's answer to the probe |")
    w("|---|---|---|---|")
    needs = collections.defaultdict(list)
    for st in sts:
        f = st.features
        for rel in f.relations:
            needs[("relation", f"{rel[0]}.{rel[1]}")].append(st)
        for kind, items in (
            ("syntax", f.syntax),
            ("operator", f.operators),
            ("function", f.functions),
            ("cast", f.casts),
            ("statement", f.statements),
            ("type", f.types),
        ):
            for x in items:
                key = (kind, x)
                if key in probes and not probes[key][1].startswith("ok"):
                    needs[key].append(st)
    for rank, key in enumerate(sorted(needs, key=lambda k: (-len(needs[k]), k)), 1):
        kind, x = key
        label = {
            "relation": f"relation `{x}`",
            "function": f"function `{x}`",
            "operator": f"operator `{x}`",
            "cast": f"cast `::{x}`",
            "syntax": x,
            "statement": f"statement {x}",
            "type": f"column type `{x}`",
        }[kind]
        answer = "no catalog relation" if kind == "relation" else f"`{code(probes[key][1])}`"
        w(f"| {rank} | {label} | {len(needs[key])} ({count_by_client(needs[key])}) | {answer} |")
    w("")
    unprobed = sorted({k for st in sts for k in (
        [("function", x) for x in st.features.functions]
        + [("cast", x) for x in st.features.casts]
        + [("operator", x) for x in st.features.operators]
        + [("syntax", x) for x in st.features.syntax]
        + [("statement", x) for x in st.features.statements]
        + [("type", x) for x in st.features.types]
    ) if k not in probes})
    if unprobed:
        w("Not probed (no probe written for them): " + ", ".join(f"{k} `{x}`" for k, x in unprobed) + ".")
        w("")


if __name__ == "__main__":
    main()
