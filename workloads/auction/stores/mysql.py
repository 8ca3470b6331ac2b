"""MySQL (MariaDB, InnoDB) for the Auction benchmark: the PostgreSQL binding's tables, joins
and entity groups (its docstring), with InnoDB's concurrency control.

Every write is one transaction on one group row (the seller's for selling, the item's for
a bid or a purchase), which it reads first and then changes with
`UPDATE ... SET ..., version = version + 1 WHERE <key> AND version = <read>`:
- pessimistic: the read is SELECT ... FOR UPDATE inside the transaction (the row's lock
  is held to the commit, so the version always matches); a lock not had within
  innodb_lock_wait_timeout (lock_timeout_ms) is Abort("lock_timeout"), rolled back first;
- optimistic: the read is a consistent read outside any transaction, the UPDATE is the
  compare-and-set: no row changed means another transaction committed on the group since,
  Abort("conflict"), and nothing is written.
A bid that is not above the max bid, or a purchase of more than is left, writes nothing.
Socialites hold asyncmy connections; schema, loading and read-back are blocking, on PyMySQL.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from bgbench import sdk
from bgbench.drivers import mysql
from bgbench.errors import StoreError
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
from bgbench.workloads.auction.stores import sql_common as sql
from bgbench.workloads.auction.stores.options_sql import MySQLAuctionOptions

if TYPE_CHECKING:
    from bgbench.workloads.auction.config import AuctionDatabaseConfig

A = TypeVar("A")
Writes = list[tuple[str, tuple[Any, ...]]]
IDS_PER_STATEMENT = 1000
TABLES = sql.TABLES

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS auction_users (id BIGINT PRIMARY KEY, name TEXT NOT NULL, "
    "next_item_no BIGINT NOT NULL, version BIGINT NOT NULL) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS auction_items (seller BIGINT NOT NULL, item_no BIGINT NOT NULL, "
    "title TEXT NOT NULL, initial_price BIGINT NOT NULL, max_bid BIGINT NOT NULL, "
    "max_bidder BIGINT NOT NULL, bid_count INT NOT NULL, next_bid_no BIGINT NOT NULL, "
    "version BIGINT NOT NULL, PRIMARY KEY (seller, item_no)) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS sale_items (seller BIGINT NOT NULL, item_no BIGINT NOT NULL, "
    "title TEXT NOT NULL, price BIGINT NOT NULL, quantity INT NOT NULL, "
    "next_purchase_no BIGINT NOT NULL, version BIGINT NOT NULL, PRIMARY KEY (seller, item_no)) "
    "ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS auction_bids (seller BIGINT NOT NULL, item_no BIGINT NOT NULL, "
    "bid_no BIGINT NOT NULL, bidder BIGINT NOT NULL, amount BIGINT NOT NULL, "
    "PRIMARY KEY (seller, item_no, bid_no), KEY auction_bids_by_bidder (bidder)) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS auction_purchases (seller BIGINT NOT NULL, "
    "item_no BIGINT NOT NULL, purchase_no BIGINT NOT NULL, buyer BIGINT NOT NULL, "
    "quantity INT NOT NULL, PRIMARY KEY (seller, item_no, purchase_no), "
    "KEY auction_purchases_by_buyer (buyer)) ENGINE=InnoDB",
)


def params(statement: str) -> str:
    """A statement of sql_common with MySQL's placeholders ($n in order)."""
    for n in range(9, 0, -1):
        statement = statement.replace(f"${n}", "%s")
    return statement


SELLER = "SELECT version, next_item_no FROM auction_users WHERE id = %s"
TAKE_ITEM_NO = (
    "UPDATE auction_users SET next_item_no = next_item_no + 1, version = version + 1 "
    "WHERE id = %s AND version = %s"
)
INSERT_AUCTION = "INSERT INTO auction_items VALUES (%s, %s, %s, %s, 0, -1, 0, 0, 0)"
INSERT_SALE = "INSERT INTO sale_items VALUES (%s, %s, %s, %s, %s, 0, 0)"
BID_STATE = (
    "SELECT version, max_bid, bid_count, next_bid_no FROM auction_items "
    "WHERE seller = %s AND item_no = %s"
)
PUT_BID = (
    "UPDATE auction_items SET max_bid = %s, max_bidder = %s, bid_count = bid_count + 1, "
    "next_bid_no = next_bid_no + 1, version = version + 1 "
    "WHERE seller = %s AND item_no = %s AND version = %s"
)
INSERT_BID = "INSERT INTO auction_bids VALUES (%s, %s, %s, %s, %s)"
STOCK = (
    "SELECT version, quantity, next_purchase_no FROM sale_items WHERE seller = %s AND item_no = %s"
)
PUT_PURCHASE = (
    "UPDATE sale_items SET quantity = quantity - %s, next_purchase_no = next_purchase_no + 1, "
    "version = version + 1 WHERE seller = %s AND item_no = %s AND version = %s"
)
INSERT_PURCHASE = "INSERT INTO auction_purchases VALUES (%s, %s, %s, %s, %s)"
ONE_ITEM = params(sql.ONE_ITEM)
ONE_SALE = params(sql.ONE_SALE)
ITEMS_BY_SELLER = params(sql.ITEMS_BY_SELLER)
SALES_BY_SELLER = params(sql.SALES_BY_SELLER)
BIDS_BY_BIDDER = params(sql.BIDS_BY_BIDDER + sql.ORDER)
WINNING_BIDS = params(sql.WINNING_BIDS + sql.ORDER)
PURCHASES_BY_BUYER = params(sql.PURCHASES_BY_BUYER + sql.ORDER)
READ_BACK = sql.ITEM_WITH_BIDS + "WHERE i.seller IN %s ORDER BY i.seller, i.item_no, b.bid_no"
NEXT_ITEM_NOS = (
    "UPDATE auction_users u JOIN (SELECT seller, max(item_no) + 1 AS n FROM (SELECT seller, "
    "item_no FROM auction_items UNION ALL SELECT seller, item_no FROM sale_items) x "
    "WHERE seller IN %s GROUP BY seller) m ON u.id = m.seller SET u.next_item_no = m.n"
)


class MySQLAuctionBinding:
    name: ClassVar[str] = "mysql"
    concurrency: ClassVar[Concurrency] = "asyncio"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[MySQLAuctionOptions]] = MySQLAuctionOptions
    file_options: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: MySQLAuctionOptions) -> None:
        self.options = options
        self._ready = False
        self._loop_pools = mysql.loop_pools(options)

    # -- schema and load -------------------------------------------------------------------
    def create_schema(self, db: "AuctionDatabaseConfig") -> None:
        mysql.create_tables(self.options, SCHEMA)
        self._ready = True

    def use_schema(self, db: "AuctionDatabaseConfig") -> None:
        if not mysql.has_tables(self.options, TABLES):
            raise StoreError(f"no Auction schema in {self.options.where}: create_schema first")
        self._ready = True

    def load_fragment(self, fragment: FragmentData, progress: Callable[[], None]) -> None:
        ids = tuple(int(u) for u in fragment.user_ids())
        chunks = [
            (ids[lo : lo + IDS_PER_STATEMENT],) for lo in range(0, len(ids), IDS_PER_STATEMENT)
        ]
        with mysql.connect(self.options) as conn, mysql.errors(self.options, "loading"):
            cursor = conn.cursor()
            # READ COMMITTED: the deletes of absent keys take no gap locks, so two
            # fragments loading at once do not deadlock on each other's inserts.
            cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
            conn.begin()
            for chunk in chunks:
                progress()
                for table, by in (("auction_bids", "bidder"), ("auction_purchases", "buyer")):
                    delete = f"DELETE FROM {table} WHERE seller IN %s OR {by} IN %s"
                    cursor.execute(delete, chunk * 2)
                for table in ("auction_items", "sale_items"):
                    cursor.execute(f"DELETE FROM {table} WHERE seller IN %s", chunk)
                cursor.execute("DELETE FROM auction_users WHERE id IN %s", chunk)
            for users in fragment.user_batches():
                progress()
                cursor.executemany(
                    "INSERT INTO auction_users VALUES (%s, %s, 0, 0)",
                    [(u.id, u.name) for u in users],
                )
            for batch in fragment.auction_item_batches():
                progress()
                cursor.executemany(
                    "INSERT INTO auction_items VALUES (%s, %s, %s, %s, %s, %s, %s, %s, 0)",
                    [(*i, max((b.bid_no for b in bids), default=-1) + 1) for i, bids in batch],
                )
                rows = [tuple(b) for _, bids in batch for b in bids]
                if rows:
                    cursor.executemany(INSERT_BID, rows)
            for sales in fragment.sale_item_batches():
                progress()
                cursor.executemany(
                    "INSERT INTO sale_items VALUES (%s, %s, %s, %s, %s, 0, 0)",
                    [tuple(s) for s in sales],
                )
            for chunk in chunks:
                cursor.execute(NEXT_ITEM_NOS, chunk)
            conn.commit()

    def read_back(self, fragment: FragmentData, progress: Callable[[], None]) -> list[ItemWithBids]:
        ids = tuple(int(u) for u in fragment.user_ids())
        found: list[ItemWithBids] = []
        with mysql.connect(self.options) as conn, mysql.errors(self.options, "read-back"):
            cursor = conn.cursor()
            cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
            for lo in range(0, len(ids), IDS_PER_STATEMENT):
                progress()
                cursor.execute(READ_BACK, (ids[lo : lo + IDS_PER_STATEMENT],))
                found.extend(sql.items_with_bids(cursor.fetchall()))
            conn.commit()
        return found

    # -- running ---------------------------------------------------------------------------
    def connect(self) -> "MySQLAuctionConnection":
        raise NotImplementedError("the MySQL binding runs socialites as asyncio tasks")

    async def connect_async(self) -> "MySQLAuctionConnection":
        if not self._ready:
            raise StoreError("create_schema or use_schema must run before connect")
        held = await mysql.Held.acquire(self._loop_pools)
        return MySQLAuctionConnection(held, self.options.concurrency_control == "pessimistic")

    async def aclose(self) -> None:
        await self._loop_pools.aclose()

    def describe(self) -> str:
        control = self.options.concurrency_control
        how = "SELECT ... FOR UPDATE" if control == "pessimistic" else "group version CAS"
        return f"{mysql.describe(self.options)}, {control}: {how}"

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self._loop_pools.clear()


async def apply(con: Any, writes: Writes) -> None:
    """The writes in order; the first is the group row's compare-and-set."""
    for n, (statement, args) in enumerate(writes):
        async with con.cursor() as cursor:
            if not await cursor.execute(statement, args) and n == 0:
                raise sdk.Abort("conflict", "the group's version moved since the read")


class MySQLAuctionConnection:
    """One socialite task's asyncmy connection, held for its run."""

    __slots__ = ("held", "lock")

    def __init__(self, held: mysql.Held, locks: bool) -> None:
        self.held = held
        self.lock = " FOR UPDATE" if locks else ""

    async def _in_group(
        self,
        read: str,
        key: tuple[Any, ...],
        plan: Callable[[tuple[Any, ...]], tuple[A, Writes]],
        missing: StoreError,
    ) -> A:
        """Read the group row, then make `plan`'s writes of it in one transaction: under
        the row's lock (pessimistic), or compare-and-set on its version (optimistic)."""
        con = await self.held.live()
        if self.lock:
            async with mysql.Transaction(con):
                rows = await mysql.rows_of(con, read + self.lock, key)
                if not rows:
                    raise missing
                answer, writes = plan(rows[0])
                await apply(con, writes)
            return answer
        rows = await mysql.rows_of(con, read, key)
        if not rows:
            raise missing
        answer, writes = plan(rows[0])
        if writes:
            async with mysql.Transaction(con):
                await apply(con, writes)
        return answer

    async def sell_auction_item(self, seller: int, title: str, initial_price: int) -> int:
        def plan(row: tuple[Any, ...]) -> tuple[int, Writes]:
            item_no = int(row[1])
            return item_no, [
                (TAKE_ITEM_NO, (seller, row[0])),
                (INSERT_AUCTION, (seller, item_no, title, initial_price)),
            ]

        return await self._in_group(SELLER, (seller,), plan, no_user(seller))

    async def sell_sale_item(self, seller: int, title: str, price: int, quantity: int) -> int:
        def plan(row: tuple[Any, ...]) -> tuple[int, Writes]:
            item_no = int(row[1])
            return item_no, [
                (TAKE_ITEM_NO, (seller, row[0])),
                (INSERT_SALE, (seller, item_no, title, price, quantity)),
            ]

        return await self._in_group(SELLER, (seller,), plan, no_user(seller))

    async def store_bid(self, seller: int, item_no: int, bidder: int, amount: int) -> BidAnswer:
        def plan(row: tuple[Any, ...]) -> tuple[BidAnswer, Writes]:
            max_bid, count, bid_no = int(row[1]), int(row[2]), int(row[3])
            if amount <= max_bid:
                return BidAnswer(max_bid, count, -1), []
            return BidAnswer(max_bid, count, bid_no), [
                (PUT_BID, (amount, bidder, seller, item_no, row[0])),
                (INSERT_BID, (seller, item_no, bid_no, bidder, amount)),
            ]

        missing = sql.missing("auction", seller, item_no)
        return await self._in_group(BID_STATE, (seller, item_no), plan, missing)

    async def buy_sale_item(
        self, seller: int, item_no: int, buyer: int, quantity: int
    ) -> PurchaseAnswer:
        def plan(row: tuple[Any, ...]) -> tuple[PurchaseAnswer, Writes]:
            left, purchase_no = int(row[1]), int(row[2])
            if left < quantity:
                return PurchaseAnswer(left, -1), []
            return PurchaseAnswer(left, purchase_no), [
                (PUT_PURCHASE, (quantity, seller, item_no, row[0])),
                (INSERT_PURCHASE, (seller, item_no, purchase_no, buyer, quantity)),
            ]

        missing = sql.missing("sale", seller, item_no)
        return await self._in_group(STOCK, (seller, item_no), plan, missing)

    async def _rows(self, statement: str, *args: Any) -> list[tuple[Any, ...]]:
        return await mysql.rows_of(await self.held.live(), statement, args)

    async def auction_item(self, seller: int, item_no: int) -> ItemWithBids:
        found = sql.items_with_bids(await self._rows(ONE_ITEM, seller, item_no))
        if not found:
            raise sql.missing("auction", seller, item_no)
        return found[0]

    async def sale_item(self, seller: int, item_no: int) -> SaleItem:
        rows = await self._rows(ONE_SALE, seller, item_no)
        if not rows:
            raise sql.missing("sale", seller, item_no)
        return sql.sale_item(rows[0])

    async def auction_items_by_seller(self, seller: int) -> list[AuctionItem]:
        return [sql.auction_item(r) for r in await self._rows(ITEMS_BY_SELLER, seller)]

    async def sale_items_by_seller(self, seller: int) -> list[SaleItem]:
        return [sql.sale_item(r) for r in await self._rows(SALES_BY_SELLER, seller)]

    async def bids_by_bidder(self, bidder: int) -> list[tuple[Bid, AuctionItem]]:
        rows = await self._rows(BIDS_BY_BIDDER, bidder)
        return [(sql.bid(r), sql.auction_item(r, 5)) for r in rows]

    async def winning_bids_by_bidder(self, bidder: int) -> list[tuple[Bid, AuctionItem]]:
        rows = await self._rows(WINNING_BIDS, bidder)
        return [(sql.bid(r), sql.auction_item(r, 5)) for r in rows]

    async def purchases_by_buyer(self, buyer: int) -> list[tuple[Purchase, SaleItem]]:
        rows = await self._rows(PURCHASES_BY_BUYER, buyer)
        return [(sql.purchase(r), sql.sale_item(r, 5)) for r in rows]

    async def close(self) -> None:
        await self.held.release()


def no_user(seller: int) -> StoreError:
    return StoreError(f"no user {seller} in the Auction tables")
