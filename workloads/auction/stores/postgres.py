"""PostgreSQL for the Auction benchmark: Strudel's entities as tables, its views as joins.

    auction_users     (id PK, name, next_item_no, version)
    auction_items     (seller, item_no PK; title, initial_price, max_bid, max_bidder,
                       bid_count, next_bid_no, version)
    sale_items        (seller, item_no PK; title, price, quantity, next_purchase_no, version)
    auction_bids      (seller, item_no, bid_no PK; bidder, amount); index (bidder)
    auction_purchases (seller, item_no, purchase_no PK; buyer, quantity); index (buyer)

Entity groups: a seller's row with its items (selling advances the seller's
`next_item_no`: item_no unique within the seller, auction and sale items alike); an item's
row with its bids or purchases (`next_bid_no`, `next_purchase_no`: unique within the item).
Every write is one transaction on one group, at the level `concurrency_control` picks:
pessimistic = READ COMMITTED with the group row locked first (SELECT ... FOR UPDATE, or the
UPDATE that advances its counter); optimistic = SERIALIZABLE with plain reads, where a
concurrent commit on the group is a serialization failure, Abort("conflict"). A refused
attempt raises `sdk.Abort` with `drivers.postgres.abort_cause`'s cause. Reads are one
statement each (one snapshot): an item with its bids is a LEFT JOIN, bids and purchases by
bidder or buyer are joins with their items (Strudel's JPA version), winning bids that join
filtered on the item's max bid and bidder. Schema, loading and read-back are blocking, on
psycopg (COPY).
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from bgbench.drivers import postgres as pg
from bgbench.drivers.postgres_options import server_of
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
from bgbench.workloads.auction.stores.options_sql import PostgresAuctionOptions
from bgbench.workloads.auction.stores.sql_common import (
    BIDS_BY_BIDDER,
    ITEM_WITH_BIDS,
    ITEMS_BY_SELLER,
    ONE_ITEM,
    ONE_SALE,
    ORDER,
    PURCHASES_BY_BUYER,
    SALES_BY_SELLER,
    TABLES,
    WINNING_BIDS,
    auction_item,
    bid,
    items_with_bids,
    missing,
    purchase,
    sale_item,
)

if TYPE_CHECKING:
    from bgbench.workloads.auction.config import AuctionDatabaseConfig

ADVISORY_LOCK = 7029
IDS_PER_STATEMENT = 10_000
ISOLATION = {"pessimistic": "read_committed", "optimistic": "serializable"}

SCHEMA = """
CREATE TABLE IF NOT EXISTS auction_users (
    id BIGINT PRIMARY KEY, name TEXT NOT NULL, next_item_no BIGINT NOT NULL,
    version BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS auction_items (
    seller BIGINT NOT NULL, item_no BIGINT NOT NULL, title TEXT NOT NULL,
    initial_price BIGINT NOT NULL, max_bid BIGINT NOT NULL, max_bidder BIGINT NOT NULL,
    bid_count INT NOT NULL, next_bid_no BIGINT NOT NULL, version BIGINT NOT NULL,
    PRIMARY KEY (seller, item_no));
CREATE TABLE IF NOT EXISTS sale_items (
    seller BIGINT NOT NULL, item_no BIGINT NOT NULL, title TEXT NOT NULL,
    price BIGINT NOT NULL, quantity INT NOT NULL, next_purchase_no BIGINT NOT NULL,
    version BIGINT NOT NULL, PRIMARY KEY (seller, item_no));
CREATE TABLE IF NOT EXISTS auction_bids (
    seller BIGINT NOT NULL, item_no BIGINT NOT NULL, bid_no BIGINT NOT NULL,
    bidder BIGINT NOT NULL, amount BIGINT NOT NULL, PRIMARY KEY (seller, item_no, bid_no));
CREATE INDEX IF NOT EXISTS auction_bids_by_bidder ON auction_bids (bidder);
CREATE TABLE IF NOT EXISTS auction_purchases (
    seller BIGINT NOT NULL, item_no BIGINT NOT NULL, purchase_no BIGINT NOT NULL,
    buyer BIGINT NOT NULL, quantity INT NOT NULL, PRIMARY KEY (seller, item_no, purchase_no));
CREATE INDEX IF NOT EXISTS auction_purchases_by_buyer ON auction_purchases (buyer);
"""

SELL = (
    "WITH slot AS (UPDATE auction_users SET next_item_no = next_item_no + 1, "
    "version = version + 1 WHERE id = $1 RETURNING next_item_no - 1 AS item_no) "
)
SELL_AUCTION = (
    SELL + "INSERT INTO auction_items SELECT $1, item_no, $2, $3, 0, -1, 0, 0, 0 FROM slot "
    "RETURNING item_no"
)
SELL_SALE = (
    SELL + "INSERT INTO sale_items SELECT $1, item_no, $2, $3, $4, 0, 0 FROM slot RETURNING item_no"
)
BID_STATE = (
    "SELECT max_bid, bid_count, next_bid_no FROM auction_items WHERE seller = $1 AND item_no = $2"
)
PUT_BID = (
    "WITH b AS (INSERT INTO auction_bids VALUES ($1, $2, $3, $4, $5)) "
    "UPDATE auction_items SET max_bid = $5, max_bidder = $4, bid_count = bid_count + 1, "
    "next_bid_no = next_bid_no + 1, version = version + 1 WHERE seller = $1 AND item_no = $2"
)
STOCK = "SELECT quantity, next_purchase_no FROM sale_items WHERE seller = $1 AND item_no = $2"
PUT_PURCHASE = (
    "WITH p AS (INSERT INTO auction_purchases VALUES ($1, $2, $3, $4, $5)) "
    "UPDATE sale_items SET quantity = quantity - $5, next_purchase_no = next_purchase_no + 1, "
    "version = version + 1 WHERE seller = $1 AND item_no = $2"
)
READ_BACK = ITEM_WITH_BIDS + "WHERE i.seller = ANY(%s) ORDER BY i.seller, i.item_no, b.bid_no"


class PostgresAuctionBinding:
    name: ClassVar[str] = "postgres"
    concurrency: ClassVar[Concurrency] = "asyncio"
    suspends: ClassVar[bool] = True
    embedded: ClassVar[bool] = False
    can_read_back: ClassVar[bool] = True
    Options: ClassVar[type[PostgresAuctionOptions]] = PostgresAuctionOptions
    file_options: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: PostgresAuctionOptions) -> None:
        self.options = options
        self._ready = False
        self._loop_pools, self._read_loop_pools = pg.tx_loop_pools(options, options.lock_timeout_ms)

    # -- schema and load -------------------------------------------------------------------
    def create_schema(self, db: "AuctionDatabaseConfig") -> None:
        pg.create_tables(self.options, ADVISORY_LOCK, SCHEMA)
        self._ready = True

    def use_schema(self, db: "AuctionDatabaseConfig") -> None:
        if not pg.has_tables(self.options, TABLES):
            raise StoreError(
                f"no Auction schema in {server_of(self.options.dsn)}: create_schema first"
            )
        self._ready = True

    def load_fragment(self, fragment: FragmentData, progress: Callable[[], None]) -> None:
        ids = [int(u) for u in fragment.user_ids()]
        with pg.connect(self.options) as conn, conn.transaction():
            frag = pg.fragment_table(conn, ids, progress)
            for table, by in (("auction_bids", "bidder"), ("auction_purchases", "buyer")):
                conn.execute(f"DELETE FROM {table} WHERE seller IN {frag} OR {by} IN {frag}")
            for table in ("auction_items", "sale_items"):
                conn.execute(f"DELETE FROM {table} WHERE seller IN {frag}")
            conn.execute(f"DELETE FROM auction_users WHERE id IN {frag}")
            with conn.cursor().copy("COPY auction_users FROM STDIN") as copy:
                for users in fragment.user_batches():
                    progress()
                    for user in users:
                        copy.write_row((user.id, user.name, 0, 0))
            self._copy_items(conn, fragment, progress)
            conn.execute(
                "UPDATE auction_users u SET next_item_no = m.n FROM (SELECT seller, "
                "max(item_no) + 1 AS n FROM (SELECT seller, item_no FROM auction_items UNION ALL "
                "SELECT seller, item_no FROM sale_items) x WHERE seller IN (SELECT id FROM frag) "
                "GROUP BY seller) m WHERE u.id = m.seller"
            )
        with pg.connect(self.options) as conn:
            conn.execute("ANALYZE " + ", ".join(TABLES))
        pg.await_replica(self.options, progress)

    @staticmethod
    def _copy_items(conn: Any, fragment: FragmentData, progress: Callable[[], None]) -> None:
        for batch in fragment.auction_item_batches():
            progress()
            with conn.cursor().copy("COPY auction_items FROM STDIN") as copy:
                for item, bids in batch:
                    next_bid = max((b.bid_no for b in bids), default=-1) + 1
                    copy.write_row((*item, next_bid, 0))
            with conn.cursor().copy("COPY auction_bids FROM STDIN") as copy:
                for _, bids in batch:
                    for b in bids:
                        copy.write_row(b)
        with conn.cursor().copy("COPY sale_items FROM STDIN") as copy:
            for sales in fragment.sale_item_batches():
                progress()
                for sale in sales:
                    copy.write_row((*sale, 0, 0))

    def read_back(self, fragment: FragmentData, progress: Callable[[], None]) -> list[ItemWithBids]:
        ids = [int(u) for u in fragment.user_ids()]
        found: list[ItemWithBids] = []
        with pg.connect(self.options) as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            for lo in range(0, len(ids), IDS_PER_STATEMENT):
                progress()
                rows = conn.execute(READ_BACK, (ids[lo : lo + IDS_PER_STATEMENT],)).fetchall()
                found.extend(items_with_bids(rows))
        return found

    # -- running ---------------------------------------------------------------------------
    def connect(self) -> "PostgresAuctionConnection":
        raise NotImplementedError("the PostgreSQL binding runs socialites as asyncio tasks")

    async def connect_async(self) -> "PostgresAuctionConnection":
        if not self._ready:
            raise StoreError("create_schema or use_schema must run before connect")
        writes, reads = await pg.acquire_pair(self._loop_pools, self._read_loop_pools)
        control = self.options.concurrency_control
        return PostgresAuctionConnection(writes, reads, ISOLATION[control])

    async def aclose(self) -> None:
        await self._loop_pools.aclose()
        if self._read_loop_pools is not None:
            await self._read_loop_pools.aclose()

    def describe(self) -> str:
        with pg.connect(self.options) as conn:
            version = pg.server_version(conn)
        control = self.options.concurrency_control
        how = "SELECT ... FOR UPDATE" if control == "pessimistic" else "serializable"
        return f"PostgreSQL {version} ({control}: {how})"

    def counters(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self._loop_pools.clear()
        if self._read_loop_pools is not None:
            self._read_loop_pools.clear()


class PostgresAuctionConnection(pg.HeldPair):
    """One socialite task's asyncpg connection, held for its run."""

    __slots__ = ("isolation", "lock")

    def __init__(self, writes: pg.Held, reads: pg.Held | None, isolation: str) -> None:
        super().__init__(writes, reads)
        self.isolation = isolation
        self.lock = " FOR UPDATE" if isolation == "read_committed" else ""

    async def _sell(self, sql: str, *args: Any) -> int:
        con = await self.writes.live()
        async with pg.transaction_attempt(con, self.isolation):
            item_no = await con.fetchval(sql, *args)
        if item_no is None:
            raise StoreError(f"no user {args[0]} in the Auction tables")
        return int(item_no)

    async def sell_auction_item(self, seller: int, title: str, initial_price: int) -> int:
        return await self._sell(SELL_AUCTION, seller, title, initial_price)

    async def sell_sale_item(self, seller: int, title: str, price: int, quantity: int) -> int:
        return await self._sell(SELL_SALE, seller, title, price, quantity)

    async def store_bid(self, seller: int, item_no: int, bidder: int, amount: int) -> BidAnswer:
        con = await self.writes.live()
        async with pg.transaction_attempt(con, self.isolation):
            state = await con.fetchrow(BID_STATE + self.lock, seller, item_no)
            if state is None:
                raise missing("auction", seller, item_no)
            max_bid, count, bid_no = int(state[0]), int(state[1]), int(state[2])
            if amount <= max_bid:
                return BidAnswer(max_bid, count, -1)
            await con.execute(PUT_BID, seller, item_no, bid_no, bidder, amount)
        return BidAnswer(max_bid, count, bid_no)

    async def buy_sale_item(
        self, seller: int, item_no: int, buyer: int, quantity: int
    ) -> PurchaseAnswer:
        con = await self.writes.live()
        async with pg.transaction_attempt(con, self.isolation):
            state = await con.fetchrow(STOCK + self.lock, seller, item_no)
            if state is None:
                raise missing("sale", seller, item_no)
            left, purchase_no = int(state[0]), int(state[1])
            if left < quantity:
                return PurchaseAnswer(left, -1)
            await con.execute(PUT_PURCHASE, seller, item_no, purchase_no, buyer, quantity)
        return PurchaseAnswer(left, purchase_no)

    async def auction_item(self, seller: int, item_no: int) -> ItemWithBids:
        found = items_with_bids(await (await self.reads.live()).fetch(ONE_ITEM, seller, item_no))
        if not found:
            raise missing("auction", seller, item_no)
        return found[0]

    async def sale_item(self, seller: int, item_no: int) -> SaleItem:
        row = await (await self.reads.live()).fetchrow(ONE_SALE, seller, item_no)
        if row is None:
            raise missing("sale", seller, item_no)
        return sale_item(row)

    async def auction_items_by_seller(self, seller: int) -> list[AuctionItem]:
        rows = await (await self.reads.live()).fetch(ITEMS_BY_SELLER, seller)
        return [auction_item(r) for r in rows]

    async def sale_items_by_seller(self, seller: int) -> list[SaleItem]:
        return [
            sale_item(r) for r in await (await self.reads.live()).fetch(SALES_BY_SELLER, seller)
        ]

    async def bids_by_bidder(self, bidder: int) -> list[tuple[Bid, AuctionItem]]:
        rows = await (await self.reads.live()).fetch(BIDS_BY_BIDDER + ORDER, bidder)
        return [(bid(r), auction_item(r, 5)) for r in rows]

    async def winning_bids_by_bidder(self, bidder: int) -> list[tuple[Bid, AuctionItem]]:
        rows = await (await self.reads.live()).fetch(WINNING_BIDS + ORDER, bidder)
        return [(bid(r), auction_item(r, 5)) for r in rows]

    async def purchases_by_buyer(self, buyer: int) -> list[tuple[Purchase, SaleItem]]:
        rows = await (await self.reads.live()).fetch(PURCHASES_BY_BUYER + ORDER, buyer)
        return [(purchase(r), sale_item(r, 5)) for r in rows]
