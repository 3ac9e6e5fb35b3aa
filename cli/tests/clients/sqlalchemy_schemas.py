#!/usr/bin/env python3
"""Issue 20's schema judge: SQLAlchemy 2 with psycopg 3 (unmodified, the versions pinned
in requirements.txt) on tables in a schema of their own.

What it checks, each step with asserts on its results:
- `MetaData(schema="app")` tables and a `Table(..., schema="audit")` table referencing
  one of them: `create_all` (after `CREATE SCHEMA`), a second `create_all` a no-op;
- an ORM session inserting and querying across the schemas (a join through the foreign
  key, a row refused with 23503), the default schema's table of the same name apart;
- the inspector: `get_schema_names`, `get_table_names(schema=...)`, `get_columns`,
  `get_pk_constraint`, `get_foreign_keys` (the referred schema named), `get_indexes`,
  `has_table(schema=...)`;
- `search_path`: an unqualified name found in the first schema of the path, as set;
- Alembic with `version_table_schema="app"`: an upgrade adding a column to an app table
  (`op.add_column(..., schema="app")`), its version row in `app.alembic_version`, and the
  downgrade.

Proven on PostgreSQL 15 and run against redodb by cargo's `client_sqlalchemy` test. Run as
`python3 sqlalchemy_schemas.py --port N` or `--url URL`. Each check is a function named
check_*, runs even after another failed; the last line says how many checks ran and
passed, and the exit status is 1 if any failed or none ran. The schemas are dropped at the
end.
"""

import argparse
import sys
import tempfile
import textwrap
import time
import traceback
from pathlib import Path

import psycopg
from alembic import command
from alembic.config import Config
from sqlalchemy import (
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    create_engine,
    exc,
    inspect,
    select,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

URL = None


class Base(DeclarativeBase):
    metadata = MetaData(schema="app")


class Customer(Base):
    __tablename__ = "customers"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(40), index=True)
    orders: Mapped[list["Order"]] = relationship(back_populates="customer")


class Order(Base):
    __tablename__ = "orders"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("app.customers.id"))
    item: Mapped[str] = mapped_column(String(40))
    customer: Mapped[Customer] = relationship(back_populates="orders")


AUDIT = Table(
    "events",
    Base.metadata,
    Column("id", Integer, primary_key=True),
    Column("order_id", Integer, ForeignKey("app.orders.id")),
    Column("what", String(40)),
    schema="audit",
)

# A table of the same name in the default schema, which the schema's must not meet.
PUBLIC = MetaData()
PUBLIC_CUSTOMERS = Table("customers", PUBLIC, Column("id", Integer, primary_key=True), Column("note", String(40)))


def engine():
    return create_engine(URL, connect_args={"connect_timeout": 10})


def fresh(eng):
    with eng.begin() as conn:
        conn.execute(text("DROP SCHEMA IF EXISTS audit CASCADE"))
        conn.execute(text("DROP SCHEMA IF EXISTS app CASCADE"))
        conn.execute(text("DROP TABLE IF EXISTS customers"))
        conn.execute(text("CREATE SCHEMA app"))
        conn.execute(text("CREATE SCHEMA audit"))
    Base.metadata.create_all(eng)
    PUBLIC.create_all(eng)


def check_create_all_makes_the_tables_in_their_schemas():
    eng = engine()
    fresh(eng)
    Base.metadata.create_all(eng)  # a no-op the second time
    with eng.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT table_schema, table_name FROM information_schema.tables "
                "WHERE table_name IN ('customers', 'orders', 'events') ORDER BY 1, 2"
            )
        ).all()
    assert [tuple(r) for r in rows] == [
        ("app", "customers"),
        ("app", "orders"),
        ("audit", "events"),
        ("public", "customers"),
    ], rows
    eng.dispose()


def check_orm_session_inserts_and_queries_across_schemas():
    eng = engine()
    fresh(eng)
    with Session(eng) as session:
        ada = Customer(name="Ada", orders=[Order(item="engine"), Order(item="notes")])
        session.add(ada)
        session.commit()
        session.execute(AUDIT.insert().values(id=1, order_id=ada.orders[0].id, what="shipped"))
        session.execute(PUBLIC_CUSTOMERS.insert().values(id=1, note="public"))
        session.commit()
        items = session.scalars(select(Order.item).join(Customer).where(Customer.name == "Ada").order_by(Order.item)).all()
        assert items == ["engine", "notes"], items
        joined = session.execute(
            select(AUDIT.c.what, Order.item).join(Order, Order.id == AUDIT.c.order_id)
        ).all()
        assert [tuple(r) for r in joined] == [("shipped", "engine")], joined
        assert session.scalars(select(PUBLIC_CUSTOMERS.c.note)).all() == ["public"]
        assert session.scalar(select(Customer.name)) == "Ada"
        try:
            session.execute(AUDIT.insert().values(id=2, order_id=999, what="lost"))
            session.commit()
            raise AssertionError("a row referencing no order was accepted")
        except exc.IntegrityError as e:
            assert isinstance(e.orig, psycopg.Error) and e.orig.sqlstate == "23503", e
            session.rollback()
    eng.dispose()


def check_inspector_reflects_each_schema():
    eng = engine()
    fresh(eng)
    insp = inspect(eng)
    names = insp.get_schema_names()
    assert "app" in names and "audit" in names and "public" in names, names
    assert sorted(insp.get_table_names(schema="app")) == ["customers", "orders"]
    assert insp.get_table_names(schema="audit") == ["events"]
    assert insp.has_table("orders", schema="app") and not insp.has_table("orders")
    columns = [(c["name"], str(c["type"]), c["nullable"]) for c in insp.get_columns("orders", schema="app")]
    assert columns == [("id", "INTEGER", False), ("customer_id", "INTEGER", False), ("item", "VARCHAR(40)", False)], columns
    assert insp.get_pk_constraint("customers", schema="app")["constrained_columns"] == ["id"]
    fks = insp.get_foreign_keys("events", schema="audit")
    assert [(f["constrained_columns"], f["referred_schema"], f["referred_table"], f["referred_columns"]) for f in fks] == [
        (["order_id"], "app", "orders", ["id"])
    ], fks
    fks = insp.get_foreign_keys("orders", schema="app")
    assert [(f["referred_schema"], f["referred_table"]) for f in fks] == [("app", "customers")], fks
    indexes = [(i["name"], i["column_names"]) for i in insp.get_indexes("customers", schema="app")]
    assert indexes == [("ix_app_customers_name", ["name"])], indexes
    reflected = MetaData()
    reflected.reflect(eng, schema="app")
    assert sorted(reflected.tables) == ["app.customers", "app.orders"], sorted(reflected.tables)
    eng.dispose()


def check_search_path_resolves_unqualified_names():
    eng = engine()
    fresh(eng)
    with eng.begin() as conn:
        conn.execute(text("INSERT INTO app.customers (name) VALUES ('in app')"))
        conn.execute(text("INSERT INTO customers (id, note) VALUES (7, 'in public')"))
    with eng.connect() as conn:
        assert conn.execute(text("SELECT current_schema()")).scalar() == "public"
        conn.execute(text("SET search_path = app, public"))
        assert conn.execute(text("SHOW search_path")).scalar() == "app, public"
        assert conn.execute(text("SELECT current_schemas(false)")).scalar() == ["app", "public"]
        assert conn.execute(text("SELECT name FROM customers")).scalar() == "in app"
        conn.execute(text("SET search_path = public"))
        assert conn.execute(text("SELECT note FROM customers")).scalar() == "in public"
        conn.rollback()
    eng.dispose()


REVISION = '''
"""note on app.customers"""
from alembic import op
import sqlalchemy as sa

revision = "0001_note"
down_revision = None


def upgrade():
    op.add_column("customers", sa.Column("note", sa.String(20), nullable=True), schema="app")


def downgrade():
    op.drop_column("customers", "note", schema="app")
'''

# Alembic's cookbook env.py (a shared connection), its version table in schema app.
ENV_PY = '''
from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=None, version_table_schema="app")
with context.begin_transaction():
    context.run_migrations()
'''


def check_alembic_keeps_its_version_table_in_a_schema():
    eng = engine()
    fresh(eng)
    with tempfile.TemporaryDirectory() as scripts:
        (Path(scripts) / "versions").mkdir()
        (Path(scripts) / "env.py").write_text(ENV_PY)
        (Path(scripts) / "versions" / "0001_note.py").write_text(textwrap.dedent(REVISION))
        cfg = Config()
        cfg.set_main_option("script_location", scripts)
        with eng.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
        insp = inspect(eng)
        assert "note" in [c["name"] for c in insp.get_columns("customers", schema="app")]
        assert insp.has_table("alembic_version", schema="app") and not insp.has_table("alembic_version")
        with eng.connect() as conn:
            assert conn.execute(text("SELECT version_num FROM app.alembic_version")).scalar() == "0001_note"
        with eng.begin() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "base")
        insp = inspect(eng)
        assert "note" not in [c["name"] for c in insp.get_columns("customers", schema="app")]
        with eng.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM app.alembic_version")).scalar() == 0
    eng.dispose()


def main():
    global URL
    parser = argparse.ArgumentParser()
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--port", type=int, help="redodb (or PostgreSQL) on 127.0.0.1:PORT, database redodb")
    where.add_argument("--url", help="a SQLAlchemy URL, postgresql+psycopg://...")
    parser.add_argument("checks", nargs="*", help="names of checks to run (default: all)")
    args = parser.parse_args()
    URL = args.url or f"postgresql+psycopg://sqlalchemy@127.0.0.1:{args.port}/redodb"
    defined = [(n, f) for n, f in globals().items() if n.startswith("check_") and callable(f)]
    checks = [(n, f) for n, f in defined if not args.checks or any(c in n for c in args.checks)]
    failed = 0
    for name, check in checks:
        start = time.monotonic()
        try:
            check()
            print(f"ok     {name} ({time.monotonic() - start:.2f} s)", flush=True)
        except Exception:
            failed += 1
            print(f"FAILED {name}\n{traceback.format_exc()}", flush=True)
    cleaned = True
    try:
        eng = engine()
        with eng.begin() as conn:
            conn.execute(text("DROP SCHEMA IF EXISTS audit CASCADE"))
            conn.execute(text("DROP SCHEMA IF EXISTS app CASCADE"))
            conn.execute(text("DROP TABLE IF EXISTS customers"))
        eng.dispose()
    except Exception:
        cleaned = False
        print(f"FAILED to drop the judge's schemas\n{traceback.format_exc()}", flush=True)
    print(f"{len(checks)} checks run of {len(defined)}: {len(checks) - failed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed or not checks or not cleaned else 0)


if __name__ == "__main__":
    main()
