"""SQLite for the Auction workload: the embedded default, and the reference binding.

Tables as Strudel's JPA version had them: users (with the counter of their items'
item_no), auction_items (max bid, max bidder, bid_count: the counter of its bids'
bid_no), bids, sale_items (quantity, purchase_count: the counter of purchase_no) and
purchases; bids and purchases indexed by bidder and buyer, joined with their items for
the by-bidder and by-buyer views. One database file shared by every load process (WAL,
a busy timeout), one connection per socialite thread.

Each write is one transaction. `concurrency_control`:
- "pessimistic": BEGIN IMMEDIATE takes the database's write lock before the first read
  (SQLite locks the whole database, so every write transaction waits its turn); a lock
  not had within busy_timeout_ms aborts the attempt as "lock_timeout".
- "optimistic": BEGIN (deferred) reads from a snapshot and takes the write lock at the
  first write; if another connection committed since the snapshot, SQLite refuses the
  upgrade (SQLITE_BUSY_SNAPSHOT) and the attempt aborts as a "conflict".
A read is one snapshot (a deferred transaction around its statements).
"""

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, TypeVar

from pydantic import BaseModel

from bgbench import sdk
from bgbench.drivers import sqlite as lite
from bgbench.workloads.auction.config import AuctionDatabaseConfig
from bgbench.workloads.auction.store import (
    AuctionItem,
    Bid,
    BidAnswer,
    Concurrency,
    FragmentData,
    ItemWithBids,
    Purchase,
    PurchaseAnswer,
    SaleItem,
)
from bgbench.workloads.auction.stores.options import SQLiteOptions

T = TypeVar("T")
IDS_PER_BEAT = 10_000

SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, next_item_no INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS auction_items (
    seller INTEGER NOT NULL, item_no INTEGER NOT NULL, title TEXT NOT NULL,
    initial_price INTEGER NOT NULL, max_bid INTEGER NOT NULL, max_bidder INTEGER NOT NULL,
    bid_count INTEGER NOT NULL, PRIMARY KEY (seller, item_no)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS bids (
    seller INTEGER NOT NULL, item_no INTEGER NOT NULL, bid_no INTEGER NOT NULL,
    bidder INTEGER NOT NULL, amount INTEGER NOT NULL,
    PRIMARY KEY (seller, item_no, bid_no)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS bids_by_bidder ON bids (bidder);
CREATE TABLE IF NOT EXISTS sale_items (
    seller INTEGER NOT NULL, item_no INTEGER NOT NULL, title TEXT NOT NULL,
    price INTEGER NOT NULL, quantity INTEGER NOT NULL, purchase_count INTEGER NOT NULL,
    PRIMARY KEY (seller, item_no)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS purchases (
    seller INTEGER NOT NULL, item_no INTEGER NOT NULL, purchase_no INTEGER NOT NULL,
    buyer INTEGER NOT NULL, quantity INTEGER NOT NULL,
    PRIMARY KEY (seller, item_no, purchase_no)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS purchases_by_buyer ON purchases (buyer);
"""
TABLES = ("users", "auction_items", "bids", "sale_items", "purchases")

ITEM_COLUMNS = "seller, item_no, title, initial_price, max_bid, max_bidder, bid_count"
SALE_COLUMNS = "seller, item_no, title, price, quantity"
ITEM = f"SELECT {ITEM_COLUMNS} FROM auction_items WHERE seller = ? AND item_no = ?"
BIDS_ON = "SELECT * FROM bids WHERE seller = ? AND item_no = ? ORDER BY bid_no"
SALE = f"SELECT {SALE_COLUMNS} FROM sale_items WHERE seller = ? AND item_no = ?"
# The by-bidder and by-buyer views: two-table joins (Strudel 8.5's JPA version).
BIDS_BY_BIDDER = (
    "SELECT b.seller, b.item_no, b.bid_no, b.bidder, b.amount, i.seller, i.item_no, i.title, "
    "i.initial_price, i.max_bid, i.max_bidder, i.bid_count "
    "FROM bids b JOIN auction_items i ON i.seller = b.seller AND i.item_no = b.item_no "
    "WHERE b.bidder = ?"
)
WINNING_BIDS = BIDS_BY_BIDDER + " AND i.max_bidder = b.bidder AND i.max_bid = b.amount"
BY_BID = " ORDER BY b.seller, b.item_no, b.bid_no"
PURCHASES_BY_BUYER = (
    "SELECT p.seller, p.item_no, p.purchase_no, p.buyer, p.quantity, s.seller, s.item_no, "
    "s.title, s.price, s.quantity "
    "FROM purchases p JOIN sale_items s ON s.seller = p.seller AND s.item_no = p.item_no "
    "WHERE p.buyer = ? ORDER BY p.seller, p.item_no, p.purchase_no"
)
NEXT_ITEM_NO = (
    "UPDATE users SET next_item_no = max("
    "coalesce((SELECT max(item_no) + 1 FROM auction_items a WHERE a.seller = users.id), 0), "
    "coalesce((SELECT max(item_no) + 1 FROM sale_items s WHERE s.seller = users.id), 0)) "
    "WHERE id IN (SELECT id FROM temp.frag)"
)


class SQLiteAuctionConnection:
    """One socialite thread's connection; each write one transaction attempt."""

    def __init__(self, conn: sqlite3.Connection, optimistic: bool) -> None:
        self.conn = conn
        self.begin = "BEGIN" if optimistic else "BEGIN IMMEDIATE"
        self.cause: sdk.AbortCause = "conflict" if optimistic else "lock_timeout"

    def _transaction(self, body: Callable[[sqlite3.Connection], T]) -> T:
        return lite.transaction_attempt(self.conn, self.begin, body, self.cause)

    def _snapshot(self, body: Callable[[sqlite3.Connection], T]) -> T:
        conn = self.conn
        conn.execute("BEGIN")
        try:
            return body(conn)
        finally:
            conn.execute("COMMIT")

    # -- writes --------------------------------------------------------------------------
    @staticmethod
    def _next_item_no(conn: sqlite3.Connection, seller: int) -> int:
        row = conn.execute("SELECT next_item_no FROM users WHERE id = ?", (seller,)).fetchone()
        if row is None:
            raise LookupError(f"no user {seller}")
        conn.execute("UPDATE users SET next_item_no = next_item_no + 1 WHERE id = ?", (seller,))
        return int(row[0])

    def sell_auction_item(self, seller: int, title: str, initial_price: int) -> int:
        def body(conn: sqlite3.Connection) -> int:
            item_no = self._next_item_no(conn, seller)
            conn.execute(
                "INSERT INTO auction_items VALUES (?, ?, ?, ?, 0, -1, 0)",
                (seller, item_no, title, initial_price),
            )
            return item_no

        return self._transaction(body)

    def sell_sale_item(self, seller: int, title: str, price: int, quantity: int) -> int:
        def body(conn: sqlite3.Connection) -> int:
            item_no = self._next_item_no(conn, seller)
            conn.execute(
                "INSERT INTO sale_items VALUES (?, ?, ?, ?, ?, 0)",
                (seller, item_no, title, price, quantity),
            )
            return item_no

        return self._transaction(body)

    def store_bid(self, seller: int, item_no: int, bidder: int, amount: int) -> BidAnswer:
        key = (seller, item_no)

        def body(conn: sqlite3.Connection) -> BidAnswer:
            row = conn.execute(
                "SELECT max_bid, bid_count FROM auction_items WHERE seller = ? AND item_no = ?",
                key,
            ).fetchone()
            if row is None:
                raise LookupError(f"no auction item {key}")
            max_bid, count = int(row[0]), int(row[1])
            if amount <= max_bid:
                return BidAnswer(max_bid, count, -1)
            conn.execute("INSERT INTO bids VALUES (?, ?, ?, ?, ?)", (*key, count, bidder, amount))
            conn.execute(
                "UPDATE auction_items SET max_bid = ?, max_bidder = ?, bid_count = ? "
                "WHERE seller = ? AND item_no = ?",
                (amount, bidder, count + 1, *key),
            )
            return BidAnswer(max_bid, count, count)

        return self._transaction(body)

    def buy_sale_item(self, seller: int, item_no: int, buyer: int, quantity: int) -> PurchaseAnswer:
        key = (seller, item_no)

        def body(conn: sqlite3.Connection) -> PurchaseAnswer:
            row = conn.execute(
                "SELECT quantity, purchase_count FROM sale_items WHERE seller = ? AND item_no = ?",
                key,
            ).fetchone()
            if row is None:
                raise LookupError(f"no sale item {key}")
            left, count = int(row[0]), int(row[1])
            if left < quantity:
                return PurchaseAnswer(left, -1)
            conn.execute(
                "INSERT INTO purchases VALUES (?, ?, ?, ?, ?)", (*key, count, buyer, quantity)
            )
            conn.execute(
                "UPDATE sale_items SET quantity = ?, purchase_count = ? "
                "WHERE seller = ? AND item_no = ?",
                (left - quantity, count + 1, *key),
            )
            return PurchaseAnswer(left, count)

        return self._transaction(body)

    # -- reads ---------------------------------------------------------------------------
    def auction_item(self, seller: int, item_no: int) -> ItemWithBids:
        def body(conn: sqlite3.Connection) -> ItemWithBids:
            row = conn.execute(ITEM, (seller, item_no)).fetchone()
            if row is None:
                raise LookupError(f"no auction item {(seller, item_no)}")
            bids = conn.execute(BIDS_ON, (seller, item_no)).fetchall()
            return ItemWithBids(AuctionItem(*row), [Bid(*b) for b in bids])

        return self._snapshot(body)

    def sale_item(self, seller: int, item_no: int) -> SaleItem:
        row = self.conn.execute(SALE, (seller, item_no)).fetchone()
        if row is None:
            raise LookupError(f"no sale item {(seller, item_no)}")
        return SaleItem(*row)

    def auction_items_by_seller(self, seller: int) -> list[AuctionItem]:
        sql = f"SELECT {ITEM_COLUMNS} FROM auction_items WHERE seller = ? ORDER BY item_no"
        return [AuctionItem(*r) for r in self.conn.execute(sql, (seller,))]

    def sale_items_by_seller(self, seller: int) -> list[SaleItem]:
        sql = f"SELECT {SALE_COLUMNS} FROM sale_items WHERE seller = ? ORDER BY item_no"
        return [SaleItem(*r) for r in self.conn.execute(sql, (seller,))]

    def bids_by_bidder(self, bidder: int) -> list[tuple[Bid, AuctionItem]]:
        rows = self.conn.execute(BIDS_BY_BIDDER + BY_BID, (bidder,))
        return [(Bid(*r[:5]), AuctionItem(*r[5:])) for r in rows]

    def winning_bids_by_bidder(self, bidder: int) -> list[tuple[Bid, AuctionItem]]:
        rows = self.conn.execute(WINNING_BIDS + BY_BID, (bidder,))
        return [(Bid(*r[:5]), AuctionItem(*r[5:])) for r in rows]

    def purchases_by_buyer(self, buyer: int) -> list[tuple[Purchase, SaleItem]]:
        rows = self.conn.execute(PURCHASES_BY_BUYER, (buyer,))
        return [(Purchase(*r[:5]), SaleItem(*r[5:])) for r in rows]

    def close(self) -> None:
        self.conn.close()


class SQLiteAuctionBinding:
    name: ClassVar[str] = "sqlite"
    concurrency: ClassVar[Concurrency] = "threads"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = True
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[BaseModel]] = SQLiteOptions
    file_options: ClassVar[tuple[str, ...]] = ("path",)
    Connection: ClassVar[type[SQLiteAuctionConnection]] = SQLiteAuctionConnection

    def __init__(self, options: SQLiteOptions) -> None:
        self.options = options
        self.path = Path(options.path)

    def _open(self) -> sqlite3.Connection:
        return lite.open_database(self.options, f"synchronous={self.options.synchronous}")

    def create_schema(self, db: AuctionDatabaseConfig) -> None:
        conn = lite.first_open(self.options, f"synchronous={self.options.synchronous}")
        try:
            with lite.exclusive(self.path):
                conn.execute("PRAGMA journal_mode=WAL")
                conn.executescript(SCHEMA)
                # Users beyond this database's (a larger one loaded here before) go, with
                # what they sold and bid.
                conn.execute("BEGIN IMMEDIATE")
                n = (db.users,)
                conn.execute("DELETE FROM bids WHERE seller >= ? OR bidder >= ?", n * 2)
                conn.execute("DELETE FROM purchases WHERE seller >= ? OR buyer >= ?", n * 2)
                conn.execute("DELETE FROM auction_items WHERE seller >= ?", n)
                conn.execute("DELETE FROM sale_items WHERE seller >= ?", n)
                conn.execute("DELETE FROM users WHERE id >= ?", n)
                conn.execute("COMMIT")
        finally:
            conn.close()

    def use_schema(self, db: AuctionDatabaseConfig) -> None:
        conn = lite.first_open(self.options, f"synchronous={self.options.synchronous}")
        try:
            have = conn.execute(
                f"SELECT count(*) FROM sqlite_master WHERE name IN {TABLES!r}"
            ).fetchone()[0]
        finally:
            conn.close()
        if have < len(TABLES):
            self.create_schema(db)  # a file of this host's own: another agent made its schema

    @staticmethod
    def _mark(conn: sqlite3.Connection, users: list[int], progress: Callable[[], None]) -> None:
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS frag (id INTEGER PRIMARY KEY)")
        conn.execute("DELETE FROM temp.frag")
        for lo in range(0, len(users), IDS_PER_BEAT):
            progress()
            conn.executemany(
                "INSERT INTO temp.frag VALUES (?)", ((u,) for u in users[lo : lo + IDS_PER_BEAT])
            )

    def load_fragment(self, fragment: FragmentData, progress: Callable[[], None]) -> None:
        with lite.exclusive(self.path, progress):
            conn = self._open()
            try:
                conn.execute("BEGIN IMMEDIATE")
                self._mark(conn, fragment.user_ids(), progress)
                mine = "IN (SELECT id FROM temp.frag)"
                conn.execute(f"DELETE FROM bids WHERE seller {mine} OR bidder {mine}")
                conn.execute(f"DELETE FROM purchases WHERE seller {mine} OR buyer {mine}")
                for table in ("auction_items", "sale_items"):
                    conn.execute(f"DELETE FROM {table} WHERE seller {mine}")
                conn.execute(f"DELETE FROM users WHERE id {mine}")
                for users in fragment.user_batches():
                    progress()
                    conn.executemany("INSERT INTO users VALUES (?, ?, 0)", users)
                for items in fragment.auction_item_batches():
                    progress()
                    conn.executemany(
                        "INSERT INTO auction_items VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (item for item, _ in items),
                    )
                    conn.executemany(
                        "INSERT INTO bids VALUES (?, ?, ?, ?, ?)",
                        (bid for _, bids in items for bid in bids),
                    )
                for sales in fragment.sale_item_batches():
                    progress()
                    conn.executemany("INSERT INTO sale_items VALUES (?, ?, ?, ?, ?, 0)", sales)
                conn.execute(NEXT_ITEM_NO)
                conn.execute("PRAGMA optimize")
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                conn.close()

    def read_back(self, fragment: FragmentData, progress: Callable[[], None]) -> list[ItemWithBids]:
        conn = self._open()
        try:
            conn.execute("BEGIN")  # one consistent snapshot
            self._mark(conn, fragment.user_ids(), progress)
            mine = "IN (SELECT id FROM temp.frag)"
            items = conn.execute(
                f"SELECT {ITEM_COLUMNS} FROM auction_items WHERE seller {mine} "
                "ORDER BY seller, item_no"
            ).fetchall()
            bids = conn.execute(
                f"SELECT * FROM bids WHERE seller {mine} ORDER BY seller, item_no, bid_no"
            ).fetchall()
            conn.execute("COMMIT")
        finally:
            conn.close()
        on: dict[tuple[int, int], list[Bid]] = {}
        for b in bids:
            on.setdefault((b[0], b[1]), []).append(Bid(*b))
        return [ItemWithBids(AuctionItem(*i), on.get((i[0], i[1]), [])) for i in items]

    # -- running ---------------------------------------------------------------------------
    def connect(self) -> SQLiteAuctionConnection:
        return self.Connection(self._open(), self.options.concurrency_control == "optimistic")

    async def connect_async(self) -> SQLiteAuctionConnection:
        raise NotImplementedError("the SQLite binding runs socialites as threads")

    async def aclose(self) -> None:
        pass

    def describe(self) -> str:
        return f"{lite.describe(self.options)}, {self.options.concurrency_control}"

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        pass
