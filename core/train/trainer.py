"""The training loop: epochs of steps (rollout → reflect → safety screen → aggregate → safety
screen → unmerge and quote literals → clip → update → repair → gate) and an epoch boundary (slow
update, meta skill; core/train/epoch.py). Once every held-out task has the top score, no candidate
could pass the gate, and the steps left are skipped (`saturated`, core/train/gate.py).
A whole run around it (resume, the test split, summary.json) is `train()` in core/train/run.py.

State (`TrainState`, core/train/state.py) is saved atomically after every step, so a crash or Ctrl-C resumes at the next step; the
work of an interrupted step is redone from the response cache and the rollout log, so no
finished model call is paid for twice.
"""

from __future__ import annotations

import math
import random

from skillsleep.core.document.folder import SkillFolder
from skillsleep.core.document.skill import Skill
from skillsleep.core.models.llm import LLM
from skillsleep.core.models.rundir import RunDir
from skillsleep.core.privacy.redact import Redactor
from skillsleep.core.shared.errors import BudgetExceeded, ConfigError
from skillsleep.core.shared.events import (
    EpochEnd,
    EventSink,
    NoEdit,
    Plan,
    Reflecting,
    Repairing,
    Saturated,
    SeedScoring,
    StepAt,
    StepProblem,
    StepStarted,
    Stopped,
)
from skillsleep.core.shared.records import Edit, Task
from skillsleep.core.shared.rejected import RejectedEdit, distinct
from skillsleep.core.train import candidates, literals, memory, quoting, repair, strategies, unmerge
from skillsleep.core.train.aggregate import AggregateResult, Screened, merge_screened
from skillsleep.core.train.config import TrainConfig
from skillsleep.core.train.edits import EditLimits, EditResult
from skillsleep.core.train.epoch import Boundary, end_epoch
from skillsleep.core.train.evaluate import Evaluator
from skillsleep.core.train.gate import mean, saturated
from skillsleep.core.train.ranking import Selection, rank_and_clip
from skillsleep.core.train.reflect import ReflectContext, Trajectory, reflect
from skillsleep.core.train.repair import Landed
from skillsleep.core.train.schedule import budget_at
from skillsleep.core.train.state import TrainState, config_hash
from skillsleep.core.train.step_gate import gate_step
from skillsleep.core.train.step_notes import refused_note
from skillsleep.core.train.step_record import StepRecord


class Trainer:
    """Trains one skill on one task set; `run()` returns the final state."""

    def __init__(
        self,
        cfg: TrainConfig,
        *,
        splits: dict[str, list[Task]],
        seed_skill: Skill,
        evaluator: Evaluator,
        optimizer: LLM,
        run_dir: RunDir,
        on_event: EventSink = lambda _: None,
        first_epoch: int = 0,
        redactor: Redactor | None = None,
        folder: SkillFolder | None = None,
    ) -> None:
        """`first_epoch` > 0 trains only epochs first_epoch..train.epochs-1 (a night is one epoch of
        a skill's training: numbering and the learning-rate schedule run on across nights).
        `redactor` (default: the built-in rules) redacts and screens every edit the optimizer writes.
        `folder`: the skill folder's other files, already redacted (`folder_context.read_context`),
        shown to every reflection as read-only context; only the skill itself is ever edited."""
        self.cfg = cfg
        self.redactor = redactor or Redactor()
        self.first_epoch = first_epoch
        if not 0 <= first_epoch < cfg.train.epochs:
            raise ConfigError(f"first_epoch {first_epoch} is outside 0..{cfg.train.epochs - 1}")
        self.train_tasks = splits.get("train", [])
        self.val = splits.get("val", [])
        self.test = splits.get("test", [])
        if not self.train_tasks or not self.val:
            raise ConfigError(
                f"training needs train and val tasks (have {len(self.train_tasks)} train, {len(self.val)} val); "
                "add tasks or set their split."
            )
        self.seed_skill = seed_skill
        self.ev = evaluator
        self.optimizer = optimizer
        self.run_dir = run_dir
        self.on_event = on_event
        self.gate = cfg.gate
        self.schedule = cfg.lr
        self.limits = EditLimits(
            max_edits=cfg.lr.max_edits,
            max_content_chars=cfg.edits.max_content_chars,
            max_content_lines=cfg.edits.max_content_lines,
            max_skill_chars=cfg.edits.max_skill_chars or None,
            edit_frontmatter=cfg.edits.edit_frontmatter,
        )
        self.folder = folder
        self.steps_per_epoch = cfg.train.steps(len(self.train_tasks))

    # --- the loop ---------------------------------------------------------------------------

    async def run(self, state: TrainState | None = None) -> TrainState:
        """Train from the seed or continue `state`; stops cleanly when the budget is reached."""
        st = state or await self.start()
        st.stopped = None
        try:
            while st.epoch < self.cfg.train.epochs:
                while st.step < self.steps_per_epoch and not saturated(self.cfg.gate, st.current_score):
                    await self._step(st)
                    st.step += 1
                    self._save(st)
                if saturated(self.cfg.gate, st.current_score) and self._left(st):
                    await self._skip_rest(st)
                    break
                self.on_event(EpochEnd(epoch=st.epoch))
                await end_epoch(self._boundary(), st)
                st.epoch += 1
                st.step = 0
                self._save(st)
            st.done = True
        except BudgetExceeded as exc:
            st.stopped = f"budget: {exc}"
            self.on_event(Stopped(reason=str(exc)))
        self._save(st)
        return st

    async def _skip_rest(self, st: TrainState) -> None:
        """Every held-out task has the top score, so no candidate could pass the gate: the steps left
        are skipped (counted in `st.skipped`). The epoch under way still ends when a step of it ran
        (its slow update may tie, its meta skill notes what the steps learned); an epoch of no step
        has nothing for its end to compare or note."""
        left = self._left(st)
        self.on_event(Saturated(score=st.current_score, tasks=len(self.val), skipped=left))
        if any(s.epoch == st.epoch for s in st.steps):
            self.on_event(EpochEnd(epoch=st.epoch))
            await end_epoch(self._boundary(), st)
        st.skipped += left
        st.epoch, st.step = self.cfg.train.epochs, 0
        self._save(st)

    def _left(self, st: TrainState) -> int:
        """The steps of the run not run yet."""
        return self.steps_per_epoch - st.step + (self.cfg.train.epochs - st.epoch - 1) * self.steps_per_epoch

    def plan(self) -> dict[str, int]:
        """Projected model calls of the whole run (an upper bound; the caches make it smaller)."""
        k, cfg = self.cfg.train.rollouts_k, self.cfg
        batch = min(cfg.train.batch_size, len(self.train_tasks)) * k
        per_step = batch + math.ceil(batch / cfg.train.minibatch_size) + 3 + len(self.val) * k * cfg.train.candidates
        per_step += 1 if cfg.train.candidates > 1 or cfg.train.fallback else 0  # a worked example asked
        per_epoch = per_step * self.steps_per_epoch
        if cfg.slow_update.enabled:
            per_epoch += 2 * min(cfg.slow_update.sample_size, len(self.train_tasks)) + 1 + len(self.val) * k
        per_epoch += 1 if cfg.meta.enabled else 0
        epochs = cfg.train.epochs - self.first_epoch
        total = len(self.val) * k + per_epoch * epochs + 3 * len(self.test) * k
        return {"steps": self.steps_per_epoch * epochs, "calls_per_step": per_step, "max_calls": total}

    async def start(self) -> TrainState:
        """Score the seed skill on the selection split and return the initial state."""
        plan = self.plan()
        epochs, per_step, most = self.cfg.train.epochs - self.first_epoch, plan["calls_per_step"], plan["max_calls"]
        self.on_event(
            Plan(epochs=epochs, steps_per_epoch=self.steps_per_epoch, calls_per_step=per_step, max_calls=most)
        )
        self.on_event(SeedScoring(tasks=len(self.val)))
        seed_scores = await self.ev.task_scores(self.seed_skill, self.val)
        score = mean(seed_scores)
        text = self.seed_skill.text
        st = TrainState(
            config_hash=config_hash(self.cfg),
            seed_skill=text,
            current=text,
            best=text,
            seed_score=score,
            current_score=score,
            best_score=score,
            epoch_start=text,
            epoch_start_score=score,
            epoch=self.first_epoch,
        )
        self._save(st)
        return st

    def _batch(self, epoch: int, step: int) -> list[Task]:
        order = list(self.train_tasks)
        random.Random(f"{self.cfg.run.seed}:{epoch}").shuffle(order)
        size = min(self.cfg.train.batch_size, len(order))
        start = (step * size) % len(order)
        return (order + order)[start : start + size]

    def _at(self, st: TrainState) -> StepAt:
        return StepAt(epoch=st.epoch, epochs=self.cfg.train.epochs, step=st.step, steps=self.steps_per_epoch)

    async def _step(self, st: TrainState) -> None:
        cfg, at = self.cfg, self._at(st)
        global_step = st.epoch * self.steps_per_epoch + st.step
        lr = budget_at(self.schedule, global_step, cfg.train.epochs * self.steps_per_epoch, st.next_budget)
        current = Skill(st.current)
        batch = self._batch(st.epoch, st.step)
        self.on_event(StepStarted(at=at, tasks=len(batch), rollouts_k=cfg.train.rollouts_k))
        rollouts = await self.ev.rollouts(current, batch)
        by_id = {t.id: t for t in batch}
        trajectories = [Trajectory(task=by_id[r.task_id], rollout=r) for r in rollouts]
        train_score = sum(self.ev.value(r) for r in rollouts) / len(rollouts)
        self.on_event(Reflecting(at=at, train_score=train_score, learning_rate=lr))
        reflected = await reflect(
            self.optimizer, current, trajectories, self._reflect_context(st), minibatch_size=cfg.train.minibatch_size
        )
        merged, safe, refused = await self._merge_screened(reflected.edits, at)
        demands = quoting.demands([t.task for t in trajectories if not t.passed] or batch)
        safe, dropped = self._usable(st, current, merged, safe, batch, demands)
        selection = await self._rank(current, safe, lr)
        st.next_budget = selection.next_budget
        result = await self._land(st, current, selection.selected, at, batch, demands)
        built, others = await self._candidates(current, result, selection, trajectories, demands, st.rejected)
        refused += result.screened + others.refused
        failures = [*reflected.problems, *merged.problems, *selection.problems, *result.problems, *others.problems]
        for failure in failures:
            self.on_event(StepProblem(at=at, problem=failure.line()))
        record = StepRecord(
            epoch=st.epoch,
            step=st.step,
            learning_rate=lr,
            batch=[t.id for t in batch],
            train_score=train_score,
            proposed=len(reflected.edits),
            merged=len(merged.edits),
            selected=selection.selected,
            applied=built[0].result.applied,  # the clip's, or the one strategy's that took its place
            skipped=distinct([*dropped, *result.skipped, *candidates.skipped(built[1:])]),
            moot=result.moot,
            candidates=len(built),
            strategies={c.number: c.strategy for c in built} if candidates.named(built) else {},
            failures=failures,
            refused=refused,
        )
        if refused:
            st.earlier_steps.append(refused_note(st.step, refused))
        step_dir = self.run_dir.step_dir(st.epoch, st.step).relative_to(self.run_dir.path)
        self.run_dir.write_json(step_dir / "proposed.json", list(map(self.redactor.edit, reflected.edits)))
        self.run_dir.write_json(step_dir / "merged.json", list(map(self.redactor.edit, merged.edits)))
        self.run_dir.write_json(step_dir / "ranked.json", {"ranked": selection.ranked, "selected": selection.selected})
        if not candidates.to_gate(current, built):
            st.earlier_steps.append(f"step {st.step + 1}: no applicable edit ({len(reflected.edits)} proposed)")
            self.on_event(NoEdit(at=at))
        else:
            await gate_step(
                st, record, current, built, result, ev=self.ev, gate=self.gate, val=self.val,
                run_dir=self.run_dir, at=at, on_event=self.on_event,
            )  # fmt: skip
        self.run_dir.write_json(step_dir / "step.json", record)
        memory.remember_refused(st.rejected, result.refused, epoch=st.epoch, step=st.step)  # once the step is whole
        st.steps.append(record)

    async def _candidates(
        self,
        current: Skill,
        landed: Landed,
        selection: Selection,
        trajectories: list[Trajectory],
        d: quoting.Demands,
        remembered: list[RejectedEdit],
    ) -> tuple[list[candidates.Candidate], strategies.Extra]:
        """The step's candidates: the clip `landed` (the optimizer's edits), then with several the
        other strategies' (core/train/strategies.py; none repeating the clip or an edit `remembered`),
        then each ranked edit alone. With one candidate, a clip that changes nothing (every edit
        dropped, refused or moot) gives its place to the first strategy that makes a new skill."""
        n, first = (
            self.cfg.train.candidates,
            EditResult(skill=landed.skill, applied=landed.applied, skipped=landed.refused),
        )
        instead = n == 1 and self.cfg.train.fallback and landed.skill == current
        others = await strategies.extra(
            self.optimizer, current, trajectories, d, self.limits, n=2 if instead else n, redactor=self.redactor,
            taken=[landed.skill], remembered=remembered,
        )  # fmt: skip
        return candidates.build(current, first, selection, self.limits, n=n, others=others.candidates), others

    async def _rank(self, current: Skill, edits: list[Edit], lr: int) -> Selection:
        """`edits` ranked and clipped to the learning rate `lr` (bounded by `[lr]` when autonomous)."""
        autonomous, bounds = self.cfg.lr.schedule == "autonomous", (self.cfg.lr.min_edits, self.cfg.lr.max_edits)
        return await rank_and_clip(self.optimizer, current, edits, budget=lr, autonomous=autonomous, bounds=bounds)

    def _usable(
        self,
        st: TrainState,
        current: Skill,
        merged: AggregateResult,
        safe: list[Edit],
        tasks: list[Task],
        demands: quoting.Demands,
    ) -> tuple[list[Edit], list[RejectedEdit]]:
        """The screened edits the step ranks: a merged edit the rules would refuse given back to its
        members when each would land (`unmerged`), the literal lines `demands` names quoted as one
        instruction (`quote_literals`), what the memory holds or too few trajectories support dropped;
        and each edit set aside on the way."""
        rewrite, refuse = (lambda e: quoting.quote_one(e, demands)), literals.answer_lines(tasks)
        edits, split = unmerge.unmerged(safe, merged, current, self.limits, rewrite=rewrite, refuse=refuse)
        kept, dropped = memory.usable(
            quoting.quote_literals(edits, demands), st.rejected, self.cfg.train.min_support, current
        )
        return kept, [*split, *dropped]

    async def _land(
        self, st: TrainState, skill: Skill, edits: list[Edit], at: StepAt, tasks: list[Task], demands: quoting.Demands
    ) -> Landed:
        """The selected edits applied (a line some `tasks` have as their answer refused first: `answer_lines`)
        and the refused ones repaired once (`repair.json` records the round)."""
        on_repair, refuse = lambda n: self.on_event(Repairing(at=at, refused=n)), literals.answer_lines(tasks)
        result = await repair.land(
            self.optimizer,
            skill,
            edits,
            self.limits,
            redactor=self.redactor,
            on_repair=on_repair,
            refuse=refuse,
            demands=demands,
            folder=self.folder,
            known=memory.recall(st.rejected, skill),
        )
        if result.asked or result.rewrites or result.fixes:
            self.run_dir.write_json(self.run_dir.step_dir(st.epoch, st.step) / "repair.json", result.record())
        return result

    def _reflect_context(self, st: TrainState) -> ReflectContext:
        """What the optimizer reads besides the trajectories: earlier steps, rejected edits, meta skill."""
        return ReflectContext(
            earlier_steps=st.earlier_steps,
            rejected=st.rejected,
            meta_skill=st.meta_skill,
            preferences=self.cfg.reflect.preferences,
            max_skill_chars=self.cfg.edits.max_skill_chars or None,
            folder=self.folder,
            edit_frontmatter=self.cfg.edits.edit_frontmatter,
        )

    async def _merge_screened(self, edits: list[Edit], at: StepAt) -> Screened:
        """The proposed edits merged between two safety screens (`merge_screened`), each refusal told."""
        screened = await merge_screened(
            self.optimizer, edits, group_size=self.cfg.train.merge_group_size, redactor=self.redactor
        )
        for r in screened.refused:
            self.on_event(StepProblem(at=at, problem=r.why()))
        return screened

    def _boundary(self) -> Boundary:
        """What the end of an epoch works with (core/train/epoch.py)."""
        return Boundary(
            cfg=self.cfg,
            optimizer=self.optimizer,
            evaluator=self.ev,
            train_tasks=self.train_tasks,
            val=self.val,
            run_dir=self.run_dir,
            redactor=self.redactor,
            on_event=self.on_event,
        )

    def _save(self, st: TrainState) -> None:
        st.spent_tokens = self.optimizer.ledger.spent_tokens
        st.spent_usd = self.optimizer.ledger.spent_usd
        self.run_dir.write_json("state.json", st)
