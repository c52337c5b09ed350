"""The pytest plugin as a user meets it: test files run with pytester (in this process), using the
fixtures, the marker, ini options and command-line flags."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

FOUR_CHANGE_STREAM_TESTS = (Path(__file__).parent / "four_change_stream_tests.py").read_text()


def test_four_change_stream_tests_with_mongosim_client(pytester):
    pytester.makepyfile(test_orders=FOUR_CHANGE_STREAM_TESTS)
    t0 = time.perf_counter()
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    elapsed = time.perf_counter() - t0
    result.assert_outcomes(passed=4)
    print(f"four change-stream tests: {elapsed:.2f} s")  # benchmarks/pytest_plugin.py keeps the figure


def test_each_test_starts_from_a_reset_cluster_unless_it_opts_out(pytester):
    pytester.makepyfile(test_reset='''
        import pytest

        def test_a_leaves_data_a_cursor_and_a_fault(mongosim_client, mongosim_cluster):
            mongosim_client.left.behind.insert_many([{"_id": i} for i in range(3)])
            cursor = mongosim_client.left.behind.find(batch_size=1)
            next(cursor)
            mongosim_cluster.faults.delay("shard01", 0.2)
            mongosim_client.admin.command("configureFailPoint", "failCommand", mode="alwaysOn",
                                          data={"failCommands": ["find"], "errorCode": 2})

        def test_b_starts_clean(mongosim_client, mongosim_cluster):
            assert "left" not in mongosim_client.list_database_names()
            assert mongosim_cluster.shard("shard01").faults.delay == 0.0
            assert mongosim_client.other.c.find_one() is None  # the failpoint is gone too
            assert mongosim_cluster.call(lambda: len(mongosim_cluster.core.router.cursors)) == 0
            mongosim_client.kept.c.insert_one({"_id": 1})

        @pytest.mark.mongosim(reset=False)
        def test_c_opted_out_sees_what_b_left(mongosim_client):
            assert mongosim_client.kept.c.find_one() == {"_id": 1}
    ''')
    pytester.runpytest_inprocess("-q", "-p", "no:randomly").assert_outcomes(passed=3)


def test_options_from_ini_flags_and_markers(pytester):
    pytester.makeini("""
        [pytest]
        mongosim_shards = 3
        mongosim_instant_hwm = false
    """)
    pytester.makepyfile(test_options='''
        import pytest

        def shards(cluster):
            return len(cluster.core.router.shards)

        def test_ini(mongosim_cluster, request):
            expected = int(request.config.getoption("--mongosim-shards") or 3)
            assert shards(mongosim_cluster) == expected
            assert mongosim_cluster.options.instant_hwm is False

        @pytest.mark.mongosim(shards=1, instant_hwm=True)
        def test_marker_beats_all(mongosim_cluster):
            assert shards(mongosim_cluster) == 1 and mongosim_cluster.options.instant_hwm

        @pytest.mark.mongosim(topology="replset")
        def test_replset(mongosim_client, mongosim_uri):
            assert "replicaSet=rs0" in mongosim_uri
            assert mongosim_client.admin.command("hello")["setName"] == "rs0"

        @pytest.mark.mongosim(isolated=True)
        def test_isolated_cluster_of_its_own(mongosim_cluster, mongosim_pool):
            assert mongosim_cluster not in mongosim_pool._clusters.values()
            mongosim_cluster.add_shard()
    ''')
    pytester.runpytest_inprocess("-q").assert_outcomes(passed=4)
    pytester.runpytest_inprocess("-q", "--mongosim-shards", "4").assert_outcomes(passed=4)


def test_marker_options_are_checked(pytester):
    pytester.makepyfile(test_bad='''
        import pytest

        @pytest.mark.mongosim(shard=3)
        def test_typo(mongosim_cluster):
            pass
    ''')
    result = pytester.runpytest_inprocess("-q")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*unknown @pytest.mark.mongosim option 'shard'*"])


def test_async_client_on_asyncio(pytester):
    pytester.makepyfile(test_async='''
        import asyncio

        import pytest

        def test_closed_by_the_test_on_its_own_loop(mongosim_async_client):
            async def main():
                async with mongosim_async_client as client:
                    orders = client.shop.orders
                    async with await orders.watch() as stream:
                        await orders.insert_one({"_id": 1})
                        event = await stream.next()
                    assert event["documentKey"] == {"_id": 1}
            asyncio.run(main())

        @pytest.fixture
        def loop():
            loop = asyncio.new_event_loop()
            yield loop
            loop.close()

        def test_closed_by_the_fixture_on_the_tests_loop(loop, mongosim_async_client, request):
            async def main():
                await mongosim_async_client.shop.orders.insert_one({"_id": 2})
                return await mongosim_async_client.shop.orders.count_documents({})
            assert loop.run_until_complete(main()) == 1   # reset before the test: the first test's order is gone
            request.config.stash["client"] = mongosim_async_client

        def test_the_previous_client_was_closed(request):
            client = request.config.stash["client"]
            assert getattr(client, "_closed", True) or client._topology is None or not client._topology._opened
    ''')
    pytester.runpytest_inprocess("-q", "-W", "error::pytest.PytestUnraisableExceptionWarning").assert_outcomes(passed=3)


def test_a_psa_replica_set_from_the_flags(pytester):
    """`--mongosim-members 2 --mongosim-arbiters 1`: the test's replica set is primary-secondary-arbiter."""
    pytester.makepyfile(test_psa='''
        import pytest

        pytestmark = pytest.mark.mongosim(topology="replset")

        def test_psa(mongosim_client, mongosim_cluster):
            assert len(mongosim_cluster.core.replica_sets["shard00"].arbiters) == 1
            hello = mongosim_client.admin.command("hello")
            assert len(hello["hosts"]) == 2 and len(hello["arbiters"]) == 1
            assert "defaultWriteConcern" not in mongosim_client.admin.command("getDefaultRWConcern")
    ''')
    pytester.runpytest_inprocess("-q", "--mongosim-members", "2", "--mongosim-arbiters", "1").assert_outcomes(passed=1)
