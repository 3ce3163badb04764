"""One grade's state in one pytest process; in the controller it also gathers the verdicts.

How a grade flows through pytest:

1. ``pytest_configure`` (``grader/plugin.py``) checks the options and picks the grade seed:
   ``--nodus-seed`` or a fresh one (local runs print it; sealed runs never show it). Under
   xdist the controller picks it and hands it to every worker.
2. ``pytest_generate_tests`` parametrizes ``nodus_size`` over public (+ hidden) sizes and
   every graded test over ``--nodus-reruns``. Hidden ids are ``hidden-N``: no dims.
3. Each graded test (marked ``nodus_graded``) names its size from its setup report on, grades in
   a sandbox and attaches its verdict to its call report (``user_properties``).
4. ``pytest_runtest_logreport`` (in the controller under xdist) gathers both; a graded test
   that named a size and produced no verdict (its worker died) counts as a failed size.
5. ``pytest_sessionfinish`` folds them into the grade, writes ``--nodus-json``, and makes the
   exit status non-zero unless the grade is correct.

Nothing here imports torch until a grade is actually requested.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_nodus.grader import bytecode, frozen_heap, standby, turns
from pytest_nodus.grader.suite import (ATTEMPT_KEY, GRADED_MARKER, GRADED_PROPERTY, RESULT_PROPERTY, STOPS_THE_GRADE,
                                       name_graded_test)

if TYPE_CHECKING:
    from pytest_nodus.grader.options import Options


class NodusSession:
    """Per-process grade state; in the controller it also gathers every worker's verdicts."""

    def __init__(self, config, options: Options):
        self.config = config
        self.options = options
        self.started = time.monotonic()
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None and "nodus_seed" in workerinput:
            self.grade_seed = int(workerinput["nodus_seed"])
        elif options.seed is not None:
            self.grade_seed = options.seed
        else:
            from pytest_nodus.grader.inputs import fresh_grade_seed

            self.grade_seed = fresh_grade_seed()
        self.results: list[dict] = []
        self.usage_errors: list[str] = []
        self.planned_dims: dict[str, list] = {}
        self._sizes_of: dict[str, list] = {}  # env name -> the sizes it times (_sizes)
        # A batch's turns (grader/turns.py): each a list of attempt indices; one turn of all
        # unless the batch is larger than its GPU holds at the selected sizes.
        self.turns: list[list[int]] = [list(range(len(options.submissions)))]
        self.yardsticks: dict[str, Path] = {}  # --nodus-against=starting_kernel: env name -> its starting kernel
        # Graded tests by node id -> (size id, rerun, attempts), as their setup reports name
        # them (GRADED_PROPERTY), so a test whose worker died mid-test still counts.
        self.expected: dict[str, tuple[str, int, list[int]]] = {}
        self.reported: set[str] = set()
        self.collected: set[str] = set()  # every test id collected (xdist: by the workers)
        self.ran: set[str] = set()  # every test id a report came back for
        self.grader = None
        self.device = None
        self.document = None
        self.documents: list[dict] = []  # a batch's, one per attempt
        self.rows: list[dict] = []  # a batch's summary rows (grader/batch_files.py)
        self.first_test_at: float | None = None  # where the grade's start-up ends (grader/phases.py)
        self.timed_selected = True  # whether any timed size is left once collection is done
        # Spawned now, to import torch beside this process's own start-up (grader/standby.py).
        self.standby = standby.spawn_for(config, options)

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    def device_choice(self):
        if self.device is None:
            from pytest_nodus.grader import devices

            try:
                self.device = devices.choose(self.options.device_request)
            except ValueError as exc:
                raise pytest.UsageError(f"pytest-nodus: {exc}") from None
        return self.device

    def get_grader(self):
        if self.grader is None:
            from pytest_nodus.grader.grading import Grader

            from pytest_nodus.grader.options import expert_cache

            self.grader = Grader(self.options.submissions, self.device_choice(), self.grade_seed, expert_cache=expert_cache(),
                                 baselines=self.options.baselines, trusted=self.options.trusted,
                                 fail_fast=self.options.fail_fast, warm_together=self.options.warm_together)
            self.grader.pool.planned_dims = self.planned_dims  # sizes every arena must hold
            self.grader.pool.yardsticks = self.yardsticks
            self.grader.pool.standby, self.standby = self.standby, {}  # the pool's to launch or close
            self.grader.expert_beside_fuzz &= self.timed_selected
        return self.grader

    # -- pytest hooks ---------------------------------------------------------------------
    def pytest_report_header(self, config):
        if self.options.submission is None:
            return None
        seed = "secret (sealed)" if self.options.sealed else f"{self.grade_seed} (replay: --nodus-seed={self.grade_seed})"
        what = (f"batch of {len(self.options.submissions)} attempts" if self.options.batch
                else f"submission {self.options.submission}")
        return [f"nodus: {what}, device {self.device_choice().describe()}, "
                f"{'sealed' if self.options.sealed else 'local check'}, reruns {self.options.reruns}, seed {seed}"
                f"{', TRUSTED (forbidden kernels waived)' if self.options.trusted else ''}"]

    def pytest_configure_node(self, node):  # xdist controller -> worker
        node.workerinput["nodus_seed"] = self.grade_seed

    def pytest_generate_tests(self, metafunc):
        env = getattr(metafunc.cls, "environment", None)
        if env is None or self.options.submission is None:
            return
        if "nodus_rerun" in metafunc.fixturenames and self.options.reruns > 1:
            reruns = range(self.options.reruns)
            metafunc.parametrize("nodus_rerun", list(reruns), ids=[f"r{n}" for n in reruns])
        if "nodus_size" in metafunc.fixturenames:
            kind = self.device_choice().kind
            if self.options.against == "expert" and kind in env.profiles and not env.profile(kind).expert.is_file():
                self.usage_errors.append(f"pytest-nodus: the expert of '{env.name}' is not installed here (it ships "
                                         "with the grader, not with the public package); a local check times "
                                         "against the starting kernel: --nodus-against=starting_kernel")
            if self.options.against == "starting_kernel":
                # An environment's folder holds its starting kernel beside its suite (README: adding an environment).
                starting = metafunc.definition.path.parent / "starting_kernel.py"
                if not starting.is_file():
                    self.usage_errors.append(f"pytest-nodus: '{env.name}' has no starting kernel ({starting})")
                self.yardsticks[env.name] = starting
            sizes = self._sizes(env)
            self.planned_dims[env.name] = [s.dims for s in sizes]  # narrowed to the selected ones after -k
            metafunc.parametrize("nodus_size", sizes, ids=[s.id for s in sizes])
        if self.options.batch and turns.FIXTURE in metafunc.fixturenames:
            # As many turns as the room at every planned size needs (-k can only select fewer).
            most = len(turns.plan(len(self.options.submissions), self._room(env, [s.dims for s in self._sizes(env)])))
            if most > 1:
                metafunc.parametrize(turns.FIXTURE, list(range(most)), ids=[f"turn{n}" for n in range(most)])

    @pytest.hookimpl(trylast=True)  # after -k/-m deselection: a partial run grades what it selected
    def pytest_collection_modifyitems(self, session, config, items):
        graded = [item for item in items if item.get_closest_marker(GRADED_MARKER)]
        self._plan_selected(graded)
        if self.options.batch and graded:  # the turns past what the selected sizes need
            unneeded = set(map(id, turns.beyond(graded, len(self.turns))))
            if unneeded:
                config.hook.pytest_deselected(items=[item for item in items if id(item) in unneeded])
                items[:] = [item for item in items if id(item) not in unneeded]
                graded = [item for item in graded if id(item) not in unneeded]
        if self.usage_errors:
            raise pytest.UsageError(self.usage_errors[0])
        if graded and self.options.submission is None:
            raise pytest.UsageError("pytest-nodus: grading an environment needs --nodus-submission=PATH")
        # A grade is one environment's: its reward, expert and JSON record mean nothing mixed.
        names = sorted({env.name for item in graded if (env := getattr(item.cls, "environment", None)) is not None})
        if len(names) > 1 and not self.is_worker:  # under xdist the controller refuses (below)
            raise pytest.UsageError(_mixed(names))
        _fuzz_first(items, graded)
        self.collected.update(item.nodeid for item in items)

    def _plan_selected(self, graded: list) -> None:
        """Arenas, the GPU ledger's reservation and a batch's room are sized for the timed sizes
        this run grades: a size deselected by -k is never called, and sizing every sandbox for
        the largest one would split batches into turns (and hold memory) for nothing. A run of
        the fuzz alone sizes a batch's turns for every timed size: its draws are as large."""
        selected: dict[str, list] = {}
        envs = {}
        for item in graded:
            env = getattr(item.cls, "environment", None)
            size = getattr(getattr(item, "callspec", None), "params", {}).get("nodus_size")
            if env is not None:
                envs[env.name] = env
            if env is not None and size is not None and size.dims not in selected.setdefault(env.name, []):
                selected[env.name].append(size.dims)
        for name in self.planned_dims:
            self.planned_dims[name] = selected.get(name, [])
        if self.options.batch and envs:  # one environment per grade: a mixed run is refused below
            env = next(iter(envs.values()))
            planned = selected.get(env.name) or [s.dims for s in self._sizes(env)]
            self.turns = turns.plan(len(self.options.submissions), self._room(env, planned))

    def _room(self, env, planned: list) -> int:
        return turns.room(env, planned, len(self.options.submissions), self.device_choice(), self.options.batch_room)

    def _sizes(self, env) -> list:
        """Every size a grade of ``env`` times here (public, and hidden when sealed)."""
        if env.name not in self._sizes_of:
            from pytest_nodus.grader.environment import load_hidden_sizes, sizes_to_grade

            kind, hidden = self.device_choice().kind, ()
            if self.options.sealed:
                try:
                    hidden = load_hidden_sizes(self.options.sealed_dir, env, kind)
                except ValueError as exc:
                    # Raised from collection_modifyitems: pytest then prints one ERROR line.
                    self.usage_errors.append(f"pytest-nodus: {exc}")
            self._sizes_of[env.name] = sizes_to_grade(env, kind, hidden)
        return self._sizes_of[env.name]

    def pytest_collection_finish(self, session):
        # A run of the fuzz alone (-k fuzz) starts no expert beside it: none would be called.
        self.timed_selected = any(getattr(item, "originalname", "") == _GRADED_TESTS[0] for item in session.items)

    def pytest_xdist_node_collection_finished(self, node, ids):
        self.collected.update(ids)
        # Graded tests are EnvironmentSuite methods: one suite class per environment.
        suites = sorted({i.rsplit("::", 1)[0] for i in ids if i.rsplit("::", 1)[-1].startswith(_GRADED_TESTS)})
        if len(suites) > 1 and self.options.submission is not None:
            pytest.exit(_mixed([suite.rsplit("::", 1)[-1] for suite in suites]), returncode=pytest.ExitCode.USAGE_ERROR)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        if self.options.submission is not None:
            name_graded_test(item, self.turns)
            if self.first_test_at is None:
                self.first_test_at = time.monotonic()

    def pytest_runtest_logreport(self, report):
        self.ran.add(report.nodeid)
        if report.nodeid in self.reported:
            return  # a later phase's report repeats the properties
        results = []
        for name, value in report.user_properties:
            if name == GRADED_PROPERTY:
                self.expected[report.nodeid] = (value["size"], value["rerun"], value["attempts"])
            elif name == RESULT_PROPERTY:
                results.append(value)  # one per attempt in a batch
        if results:
            self.reported.add(report.nodeid)
            self.results += results

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        closing = time.monotonic()
        if self.grader is not None:
            self.grader.close()
        standby.close(self.standby)  # spawned for a grade that graded nothing here
        # In this process only: under xdist the workers start up and close on their own.
        outside = {} if self.first_test_at is None else {
            "startup": 1e3 * (self.first_test_at - self.started), "teardown": 1e3 * (time.monotonic() - closing)}
        if self.is_worker or self.options.submission is None or not (self.expected or self.reported):
            return
        from pytest_nodus.grader import report

        unfinished = sorted(set(self.expected) - self.reported)
        never = sorted(self.collected - self.ran)
        not_graded = 0
        # In a batch one attempt's failure stops nothing (grader/suite.py): only -x / --maxfail.
        stopping = self.config.getoption("maxfail") or (not self.options.batch and any(
            f.get("code") in STOPS_THE_GRADE for r in self.results for f in r.get("flags", [])))
        if stopping and any(r.get("status") != "correct" for r in self.results):
            # Stopped after a size failed (--nodus-fail-fast, pytest's -x, or a kernel file that
            # does not load): the grade is at the floor whatever the rest would have said, so
            # what did not run is counted, not failed. Only a failed size can stop a grade this way.
            not_graded, unfinished, never = len(unfinished) + len(never), [], []
        for nodeid in unfinished:
            # A graded test with no verdict: its worker died or it errored before grading. In
            # a batch, its turn's attempts are the ones without one.
            size_id, rerun, attempts = self.expected[nodeid]
            lost = _no_result(size_id, rerun, "this graded test produced no result (its worker died, or the grader "
                                              "raised: see the test's report)")
            self.results += [{**lost, ATTEMPT_KEY: i} for i in attempts] if self.options.batch else [lost]
        if never:
            # Collected and never run (every worker that could have run them died): the grade
            # cannot vouch for them, whatever they were.
            self.results.append(_no_result("fuzz", 0, f"{len(never)} collected test(s) never ran, e.g. {never[0]}"))
        if self.options.batch:
            self._finish_batch(session, not_graded, outside)
            return
        meta = self._meta(self.options.submission, not_graded, outside)
        self.document = report.build_grade(self.results, meta, self.options.reruns)
        self._write(session, self.document, stopping)

    def pytest_unconfigure(self, config):
        standby.close(self.standby)  # a session that never reached its finish
        frozen_heap.thaw()
        bytecode.refresh()  # for the next grade on this host, after this one

    def _meta(self, submission: Path, not_graded: int, outside: dict) -> dict:
        from pytest_nodus.grader import environment, report

        device = self.device_choice()
        return {
            "submission": {"path": str(submission), "sha256": environment.file_sha256(submission)},
            "device": {"kind": device.kind, "name": device.name, "description": device.describe()},
            "sealed": self.options.sealed,
            "trusted": self.options.trusted,
            "against": self.options.against,
            "seed": None if self.options.sealed else self.grade_seed,
            "wall_s": round(time.monotonic() - self.started, 3),
            "not_graded": not_graded,
            "outside_sizes": outside,
            "grader": report.grader_versions(),
        }

    def _finish_batch(self, session, not_graded: int, outside: dict) -> None:
        """One document per attempt, as its own grade would have written it, then the batch's
        rows and picture (``--nodus-json`` names their folder)."""
        from pytest_nodus.grader import batch_files, report

        files = self.options.submissions
        per_attempt: list[list[dict]] = [[] for _ in files]
        for result in self.results:
            attempt = result.pop(ATTEMPT_KEY, None)
            for i in ([attempt] if attempt is not None else range(len(files))):  # no_result: every attempt's
                per_attempt[i].append(dict(result))
        self.documents = [report.build_grade(results, self._meta(path, not_graded, outside), self.options.reruns)
                          for path, results in zip(files, per_attempt)]
        self.rows = [batch_files.row(i, path, 1, document, None)
                     for i, (path, document) in enumerate(zip(files, self.documents))]
        out = self.options.json_path
        if out is not None:
            for i, (path, document) in enumerate(zip(files, self.documents)):
                batch_files.write_document(out, i, path, document)
            batch_files.write_rows(out / batch_files.ROWS, self.rows)
            env = self.documents[0]["env"]["name"] if self.documents else ""
            batch_files.draw_rows(out / batch_files.PICTURE, self.rows, f"pytest-nodus batch: {env}, "
                                  f"{len(files)} attempts, reward paid vs speed measured")
        if self.options.agent_report_path is not None:
            from pytest_nodus.grader import agent_report

            self.options.agent_report_path.mkdir(exist_ok=True)
            for i, (path, document) in enumerate(zip(files, self.documents)):
                agent_report.write(document, self.options.agent_report_path / batch_files.document_name(i, path))
        # A batch exits 0 only when every attempt is correct, as a single grade does.
        if any(d["status"] != "correct" for d in self.documents) and session.exitstatus in (
                0, pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _write(self, session, document: dict, stopping) -> None:
        from pytest_nodus.grader import report

        if self.options.json_path is not None:
            report.write_json(document, self.options.json_path)
        if self.options.agent_report_path is not None:
            from pytest_nodus.grader import agent_report

            agent_report.write(document, self.options.agent_report_path)
        # A grade that stopped at a failure (a kernel file that does not load; --nodus-fail-fast
        # under xdist) failed, exit status 1; pytest would say it was interrupted.
        if document["status"] != "correct" and (session.exitstatus == 0 or (
                session.exitstatus == pytest.ExitCode.INTERRUPTED and stopping)):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        if self.rows:
            terminalreporter.write_sep("=", f"pytest-nodus batch: {len(self.rows)} attempts")
            from pytest_nodus.grader.batch_files import terminal_lines

            for line in terminal_lines(self.rows, self.options.json_path):
                terminalreporter.write_line(line)
            return
        if self.document is None:
            return
        from pytest_nodus.grader import report

        terminalreporter.write_sep("=", "pytest-nodus grade")
        for line in report.terminal_lines(self.document):
            terminalreporter.write_line(line)




_GRADED_TESTS = ("test_size", "test_fuzzed_sizes")  # EnvironmentSuite's (grader/suite.py)


def _fuzz_first(items: list, graded: list) -> None:
    """Each rerun's fuzzed sizes before its timed ones, in the graded tests' own places. The fuzz
    calls no expert, so the expert's sandbox, still starting in standby (torch and, on a GPU,
    its compiler: seconds, grader/standby.py), finishes beside the fuzz's calls instead of
    holding up the first timed size. Verdicts do not depend on the order: every size is
    graded on inputs of its own, and the report lists sizes in its own order."""
    def key(item) -> tuple[int, int, int]:
        rerun = item.callspec.params.get("nodus_rerun", 0) if hasattr(item, "callspec") else 0
        # A batch's turns one after the other (grader/turns.py): a turn's sandboxes live once.
        return turns.turn_of(item), rerun, 0 if item.originalname == _GRADED_TESTS[1] else 1

    marked = set(map(id, graded))
    places = [i for i, item in enumerate(items) if id(item) in marked]
    for place, item in zip(places, sorted((items[i] for i in places), key=key)):
        items[place] = item


def _mixed(names: list[str]) -> str:
    return (f"pytest-nodus: this run collects {len(names)} environment suites ({', '.join(names)}); a grade covers "
            "one: name its suite (pytest env_suites/NAME ...)")


def _no_result(size_id: str, rerun: int, detail: str) -> dict:
    return {"id": size_id, "kind": size_id.split("-", 1)[0], "rerun": rerun, "status": "error", "timed": True,
            "speedup": None, "flags": [{"size": size_id, "code": "no_result", "detail": detail}]}
