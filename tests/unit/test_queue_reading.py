"""One reading of the waiting queue: read lazily, a page at a time, and shared, so that the
answer to a submission reads on from where its pass stopped instead of reading again."""

from job_queue.scheduler import WaitingJob
from job_queue.scheduler.fair_share import FairShare, Standings
from job_queue.store.queue_reading import FIRST_PAGE, QueueReading
from job_queue.store.table import line_partition, order_key, partition

P5 = "ml.p5.48xlarge"


class Partitions:
    """Waiting entries by partition, answering Query pages as DynamoDB would (in sort key
    order, ``limit`` at a time), and noting each page asked for."""

    def __init__(self, jobs: dict[str, int]) -> None:
        self.entries = {
            partition(itype): [
                (order_key(0, seq), WaitingJob(f"{itype}-{seq}", 0, seq, {itype: 1}))
                for seq in range(1, count + 1)
            ]
            for itype, count in jobs.items()
        }
        self.pages: list[tuple[str, int]] = []

    def read_page(self, name, after, start, limit):
        self.pages.append((name, limit))
        entries = [e for e in self.entries.get(name, []) if after is None or e[0] > after]
        begin = 0 if start is None else start["at"]
        page = entries[begin : begin + limit]
        more = begin + limit < len(entries)
        return page, {"at": begin + limit} if more else None


def test_a_second_reader_reads_on_from_where_the_first_stopped():
    table = Partitions({P5: 100})
    reading = QueueReading(table.read_page)
    first = []
    for job in reading.waiting([P5], multi=False):
        first.append(job)
        if len(first) == 3:
            break  # a pass that could start no more jobs
    assert table.pages == [("WAITING#ml.p5.48xlarge", FIRST_PAGE)]

    again = [job.name for job in reading.waiting([P5], multi=False, expect=50)]

    assert again[:3] == [job.name for job in first]
    assert again == [f"{P5}-{seq}" for seq in range(1, 101)]  # in order, each once
    # One page more for the fifty it expected, then pages that double to the end.
    assert [limit for _, limit in table.pages] == [FIRST_PAGE, 50 - FIRST_PAGE, 32, 64]


def test_a_closed_partition_is_read_no_further_while_others_go_on():
    table = Partitions({P5: 40, "ml.g5.xlarge": 40})
    reading = QueueReading(table.read_page)
    seen = []

    def is_open(itype, share):
        return itype != P5 or len(seen) < 2  # P5 closes once two of its jobs are seen

    for job in reading.waiting([P5, "ml.g5.xlarge"], is_open):
        if P5 in job.demand:
            seen.append(job)
    # The closed partition gives what its page read, and is never read again.
    assert len(seen) == FIRST_PAGE
    assert [name for name, _ in table.pages].count(partition(P5)) == 1
    assert [name for name, _ in table.pages].count(partition("ml.g5.xlarge")) == 3  # 8+16+32


def test_a_page_of_the_listing_starts_behind_its_token():
    table = Partitions({P5: 20})
    reading = QueueReading(table.read_page, after=order_key(0, 15))
    assert [job.seq for job in reading.waiting([P5], multi=False)] == [16, 17, 18, 19, 20]


def _lines_table(lines: dict[str, list[int]], legacy: dict[str, list[int]] | None = None):
    """Each submitter's jobs (by seq) in its own line, and some queued before fair share in
    the partition itself."""
    table = Partitions({})
    plain = partition(P5)
    for who, seqs in lines.items():
        table.entries[line_partition(plain, who)] = [
            (order_key(1, s), WaitingJob(f"{who}-{s}", 1, s, {P5: 1}, submitter=who, in_line=True))
            for s in seqs
        ]
    table.entries[plain] = sorted(
        (order_key(1, s), WaitingJob(f"{who}-{s}", 1, s, {P5: 1}, submitter=who))
        for who, seqs in (legacy or {}).items()
        for s in seqs
    )
    return table, {plain: tuple(lines)}


def test_with_fair_share_off_the_lines_are_read_in_first_come_order():
    table, lines = _lines_table({"alice": [1, 2, 3, 6], "bob": [4, 5]})
    reading = QueueReading(table.read_page, lines=lines)
    names = [job.name for job in reading.waiting([P5], multi=False)]
    assert names == ["alice-1", "alice-2", "alice-3", "bob-4", "bob-5", "alice-6"]


def test_with_fair_share_on_the_lines_merge_by_standing_reading_a_head_of_each():
    table, lines = _lines_table({"alice": list(range(1, 40)), "bob": [50, 51]})
    used = Standings({"alice": 7200.0}, FairShare(half_life_s=3600.0))
    reading = QueueReading(table.read_page, lines=lines, standing=used)
    first = next(iter(reading.waiting([P5], multi=False)))
    assert first.name == "bob-50"  # alice has used two instance-hours, bob nothing
    # The pass read the (empty) partition and one job of each line, not alice's 39.
    assert sorted(limit for name, limit in table.pages if "@" in name) == [1, 1]


def test_jobs_queued_before_fair_share_join_the_head_of_their_submitters_line():
    table, lines = _lines_table({"alice": [5, 6], "bob": [7]}, legacy={"alice": [1], "bob": [2]})
    used = Standings({"alice": 7200.0}, FairShare(half_life_s=3600.0))
    reading = QueueReading(table.read_page, lines=lines, standing=used)
    names = [job.name for job in reading.waiting([P5], multi=False)]
    # Bob stands lower; his older job goes before his newer one, and so do alice's.
    assert names[:2] == ["bob-2", "bob-7"]
    assert names[2:] == ["alice-1", "alice-5", "alice-6"]
