"""TrainConfig loading: defaults, extends, error messages, overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillsleep.core.models.backends.registry import default_prices
from skillsleep.core.shared.errors import ConfigError
from skillsleep.core.train.config import TrainConfig, load_config, resolve_path

MINIMAL = '[data]\ntasks = "tasks.jsonl"\nskill = "SKILL.md"\n'


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_minimal_file_gets_every_default(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path / "proj" / "run.toml", MINIMAL))
    assert isinstance(cfg, TrainConfig)
    assert cfg.run.name == "proj" and cfg.run.seed == 0
    assert cfg.target.backend == "local:qwen2.5-coder-0.5b" and cfg.target.max_tokens == 256
    assert cfg.optimizer.max_tokens == 1024
    assert cfg.judge.backend == "" and cfg.judge_model.backend == cfg.optimizer.backend
    assert cfg.train.epochs == 2 and cfg.train.steps(17) == 3
    assert cfg.lr.schedule == "cosine" and cfg.gate.metric == "hard"
    assert cfg.data.split.train == 0.5
    assert cfg.target.retry.attempts == 4
    assert cfg.budget.to_budget().tokens is None and cfg.budget.to_budget().usd is None
    assert set(default_prices()) <= set(cfg.prices)


def test_data_paths_resolve_against_the_config_directory(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path / "proj" / "run.toml", MINIMAL))
    assert cfg.base_dir == (tmp_path / "proj").resolve()
    assert Path(cfg.data.tasks) == (tmp_path / "proj" / "tasks.jsonl").resolve()
    assert resolve_path(cfg, "other.md") == cfg.base_dir / "other.md"
    assert resolve_path(cfg, "/abs/x.md") == Path("/abs/x.md")


def test_missing_data_section_says_what_is_required(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"data: missing \(required\)"):
        load_config(write(tmp_path / "run.toml", "[train]\nepochs = 1\n"))


def test_extends_chain_merges_deeply_with_parent_relative_paths(tmp_path: Path) -> None:
    write(
        tmp_path / "shared" / "root.toml",
        '[data]\ntasks = "root_tasks.jsonl"\nskill = "S.md"\n[train]\nepochs = 5\nbatch_size = 3\n'
        "[target]\nmax_tokens = 99\n[target.retry]\nattempts = 7\n",
    )
    write(
        tmp_path / "shared" / "base.toml",
        'extends = "root.toml"\n[train]\nepochs = 4\n[target.retry]\nbase_delay_s = 0.5\n',
    )
    child = write(
        tmp_path / "proj" / "run.toml",
        'extends = "../shared/base.toml"\n[data]\nskill = "mine.md"\n[train]\nminibatch_size = 2\n',
    )
    cfg = load_config(child)
    assert cfg.train.epochs == 4 and cfg.train.batch_size == 3 and cfg.train.minibatch_size == 2
    assert cfg.target.max_tokens == 99
    assert cfg.target.retry.attempts == 7 and cfg.target.retry.base_delay_s == 0.5
    assert Path(cfg.data.tasks) == (tmp_path / "shared" / "root_tasks.jsonl").resolve()
    assert Path(cfg.data.skill) == (tmp_path / "proj" / "mine.md").resolve()
    assert cfg.base_dir == (tmp_path / "proj").resolve()
    assert [p.name for p in cfg.sources] == ["run.toml", "base.toml", "root.toml"]


def test_user_prices_merge_over_the_defaults(tmp_path: Path) -> None:
    cfg = load_config(
        write(
            tmp_path / "run.toml",
            MINIMAL + '[prices."deepseek:deepseek-v4-flash"]\ninput = 9.0\n'
            '[prices."openai:gpt-x"]\ninput = 1.0\noutput = 2.0\n',
        )
    )
    flash = cfg.prices["deepseek:deepseek-v4-flash"]
    assert flash.input == 9.0 and flash.output == default_prices()["deepseek:deepseek-v4-flash"].output
    assert cfg.prices["openai:gpt-x"].output == 2.0


def test_extends_cycle_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "a.toml", 'extends = "b.toml"\n' + MINIMAL)
    write(tmp_path / "b.toml", 'extends = "a.toml"\n')
    with pytest.raises(ConfigError, match=r"extends cycle: .*a\.toml → .*b\.toml → .*a\.toml"):
        load_config(tmp_path / "a.toml")


def test_unknown_key_names_file_section_and_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path / "run.toml", MINIMAL + '[gate]\nmetrc = "soft"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "run.toml: [gate] unknown key 'metrc' (did you mean 'metric'?)" in str(info.value)


def test_unknown_nested_and_top_level_keys(tmp_path: Path) -> None:
    path = write(tmp_path / "run.toml", "epochz = 1\n" + MINIMAL + "[target.retry]\nattempt = 2\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    msg = str(info.value)
    assert "unknown top-level key 'epochz'" in msg
    assert "[target.retry] unknown key 'attempt' (did you mean 'attempts'?)" in msg


def test_unknown_key_in_a_parent_names_the_parent(tmp_path: Path) -> None:
    write(tmp_path / "base.toml", "[train]\nepoch = 2\n")
    child = write(tmp_path / "run.toml", 'extends = "base.toml"\n' + MINIMAL)
    with pytest.raises(ConfigError, match=r"base\.toml: \[train\] unknown key 'epoch' \(did you mean 'epochs'\?\)"):
        load_config(child)


def test_type_error_says_expected_and_got(tmp_path: Path) -> None:
    path = write(tmp_path / "run.toml", MINIMAL + '[train]\nepochs = "two"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "run.toml: [train] epochs: expected an integer, got 'two'" in str(info.value)


def test_literal_and_bound_errors_are_plain(tmp_path: Path) -> None:
    path = write(tmp_path / "run.toml", MINIMAL + '[lr]\nschedule = "step"\n[gate]\nmixed_weight = 2\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    msg = str(info.value)
    assert "[lr] schedule: expected 'constant', 'linear', 'cosine' or 'autonomous', got 'step'" in msg
    assert "[gate] mixed_weight: must be <= 1, got 2" in msg


def test_section_level_rule_names_the_section(tmp_path: Path) -> None:
    path = write(tmp_path / "run.toml", MINIMAL + "[lr]\nmax_edits = 2\nmin_edits = 5\n")
    with pytest.raises(ConfigError, match=r"run\.toml: \[lr\] min_edits \(5\) must not exceed max_edits \(2\)"):
        load_config(path)


def test_type_error_from_a_parent_names_the_parent(tmp_path: Path) -> None:
    write(tmp_path / "base.toml", "[train]\nbatch_size = 1.5\n")
    child = write(tmp_path / "run.toml", 'extends = "base.toml"\n' + MINIMAL)
    with pytest.raises(ConfigError, match=r"base\.toml: \[train\] batch_size: expected an integer, got 1\.5"):
        load_config(child)


@pytest.mark.parametrize(
    ("override", "get", "expected"),
    [
        ("train.epochs=3", lambda c: c.train.epochs, 3),
        ("gate.mixed_weight=0.25", lambda c: c.gate.mixed_weight, 0.25),
        ("gate.no_regress=true", lambda c: c.gate.no_regress, True),
        ("gate.min_wins=3", lambda c: c.gate.min_wins, 3),
        ("train.min_support=2", lambda c: c.train.min_support, 2),
        ("gate.metric=soft", lambda c: c.gate.metric, "soft"),
        ("lr.schedule=linear", lambda c: c.lr.schedule, "linear"),
        ('reflect.preferences="be brief"', lambda c: c.reflect.preferences, "be brief"),
        ("target.retry.attempts=9", lambda c: c.target.retry.attempts, 9),
        ('prices."deepseek:deepseek-v4-pro".output=2.5', lambda c: c.prices["deepseek:deepseek-v4-pro"].output, 2.5),
        ("target.backend=deepseek:deepseek-v4-flash", lambda c: c.target.backend, "deepseek:deepseek-v4-flash"),
    ],
)
def test_overrides_parse_toml_scalars_or_plain_strings(tmp_path: Path, override: str, get, expected) -> None:
    cfg = load_config(write(tmp_path / "run.toml", MINIMAL + "[train]\nepochs = 1\n"), [override])
    assert get(cfg) == expected


def test_later_overrides_win_and_keep_siblings(tmp_path: Path) -> None:
    cfg = load_config(
        write(tmp_path / "run.toml", MINIMAL + "[train]\nbatch_size = 5\n"), ["train.epochs=3", "train.epochs=4"]
    )
    assert cfg.train.epochs == 4 and cfg.train.batch_size == 5


def test_unknown_override_key_is_named(tmp_path: Path) -> None:
    path = write(tmp_path / "run.toml", MINIMAL)
    with pytest.raises(
        ConfigError, match=r"override 'gate.metrc=soft': \[gate\] unknown key 'metrc' \(did you mean 'metric'\?\)"
    ):
        load_config(path, ["gate.metrc=soft"])
    with pytest.raises(ConfigError, match="unknown top-level key 'trian'"):
        load_config(path, ["trian.epochs=3"])


def test_override_type_error_names_the_override(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"override 'train.epochs=two': \[train\] epochs: expected an integer, got 'two'"
    ):
        load_config(write(tmp_path / "run.toml", MINIMAL), ["train.epochs=two"])


def test_malformed_override_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="expected section.key=value"):
        load_config(write(tmp_path / "run.toml", MINIMAL), ["train.epochs"])


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"config file not found: .*nope\.toml"):
        load_config(tmp_path / "nope.toml")


def test_missing_parent_names_the_child(tmp_path: Path) -> None:
    child = write(tmp_path / "run.toml", 'extends = "gone.toml"\n' + MINIMAL)
    with pytest.raises(ConfigError, match=r"config file not found: .*gone\.toml \(extended by .*run\.toml\)"):
        load_config(child)


def test_toml_syntax_error_gives_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "run.toml", MINIMAL + "[train]\nepochs = \n")
    with pytest.raises(ConfigError, match=r"run\.toml: invalid TOML: .*line 5"):
        load_config(path)


def test_shipped_example_config_loads() -> None:
    root = Path(__file__).resolve().parent.parent
    cfg = load_config(root / "examples" / "answer-format" / "run.toml")
    assert cfg.target.backend == cfg.optimizer.backend == "local:qwen2.5-coder-0.5b"
    assert cfg.train.epochs == 1 and cfg.train.batch_size == 10 and cfg.lr.max_edits == 3
    assert Path(cfg.data.tasks).is_file() and Path(cfg.data.skill).is_file()


def test_config_without_a_file_comes_from_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = TrainConfig.from_overrides(["data.tasks='t.jsonl'", "data.skill=/abs/S.md", "train.epochs=3"])
    assert Path(cfg.data.tasks) == tmp_path / "t.jsonl" and cfg.data.skill == "/abs/S.md"
    assert cfg.train.epochs == 3 and cfg.base_dir == tmp_path and cfg.sources == []
    with pytest.raises(ConfigError, match=r"overrides: data: missing \(required\)"):
        TrainConfig.from_overrides(["train.epochs=3"])


# --- files that are not UTF-8 TOML ------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32"])
def test_a_config_with_a_byte_order_mark_is_read(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "run.toml"
    path.write_bytes((MINIMAL.replace("\n", "\r\n") + '[reflect]\npreferences = "naïve — short"\n').encode(encoding))
    assert load_config(path).reflect.preferences == "naïve — short"


def test_a_latin1_config_names_the_line_and_byte(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_bytes(MINIMAL.encode() + b'[reflect]\npreferences = "na\xefve"\n')
    with pytest.raises(
        ConfigError,
        match=r"config file .*run\.toml is not UTF-8 text: the byte 0xef at line 5 "
        r"\(byte offset \d+\).*save it as UTF-8",
    ):
        load_config(path)


def test_a_latin1_parent_is_named_with_its_child(tmp_path: Path) -> None:
    write(tmp_path / "base.toml", "")
    (tmp_path / "base.toml").write_bytes(b'[reflect]\npreferences = "\xe9"\n')
    child = write(tmp_path / "run.toml", 'extends = "base.toml"\n' + MINIMAL)
    with pytest.raises(ConfigError, match=r"base\.toml \(extended by .*run\.toml\) is not UTF-8 text: .*line 2"):
        load_config(child)


def test_a_folder_as_config_or_parent_says_it_is_a_folder(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    with pytest.raises(ConfigError, match=r"config file .*conf is a folder, not a file; give a TOML run config"):
        load_config(tmp_path / "conf")
    child = write(tmp_path / "run.toml", 'extends = "conf"\n' + MINIMAL)
    with pytest.raises(ConfigError, match=r"conf \(extended by .*run\.toml\) is a folder, not a file"):
        load_config(child)


@pytest.mark.parametrize("text", ["a = " + "[" * 50_000 + "]" * 50_000, "x = 1\0\n", ""])
def test_hostile_toml_is_a_clean_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "run.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"run\.toml"):
        load_config(path)


@pytest.mark.parametrize(
    ("table", "value"),
    [
        ("[target]\ntemperature", "inf"),
        ("[target.retry]\ntimeout_s", "nan"),
        ("[data.split]\ntrain", "inf"),
        ('[prices."deepseek:*"]\ninput', "nan"),
        ("[gate]\nmin_margin", "-inf"),
        ("[budget]\nusd", "inf"),
    ],
)
def test_a_number_that_is_not_finite_is_refused_naming_the_key(tmp_path: Path, table: str, value: str) -> None:
    path = write(tmp_path / "run.toml", MINIMAL + f"{table} = {value}\n")
    key = table.split("\n")[1]
    with pytest.raises(ConfigError, match=rf"run\.toml: .*{key}: expected a finite number, got {value}"):
        load_config(path)
    with pytest.raises(ConfigError, match=r"override .*: expected a finite number"):
        load_config(write(tmp_path / "ok.toml", MINIMAL), ["target.temperature=nan"])


def test_a_negative_price_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "run.toml", MINIMAL + '[prices."deepseek:*"]\ninput = -1.0\n')
    with pytest.raises(ConfigError, match=r"input: must be >= 0, got -1.0"):
        load_config(path)


@pytest.mark.parametrize("override", ["gate.min_wins=0", "train.min_support=0"])
def test_evidence_settings_below_one_are_refused_by_name(tmp_path: Path, override: str) -> None:
    key = override.split("=")[0].split(".")[1]
    with pytest.raises(ConfigError, match=rf"\] {key}: "):
        load_config(write(tmp_path / "run.toml", MINIMAL), [override])


@pytest.mark.parametrize("role", ["optimizer", "judge"])
def test_a_call_roles_timeout_s_and_retry_timeout_s_are_one_limit(tmp_path: Path, role: str) -> None:
    """[optimizer] / [judge] timeout_s limits each call (it was parsed and ignored: the backend read
    only retry.timeout_s); either key sets both, and two different values are refused."""
    own = getattr(load_config(write(tmp_path / "a.toml", MINIMAL + f"[{role}]\ntimeout_s = 900\n")), role)
    assert (own.timeout_s, own.retry.timeout_s) == (900, 900)
    retry = getattr(load_config(write(tmp_path / "b.toml", MINIMAL + f"[{role}.retry]\ntimeout_s = 30\n")), role)
    assert (retry.timeout_s, retry.retry.timeout_s) == (30, 30)
    same = load_config(write(tmp_path / "c.toml", MINIMAL), [f"{role}.timeout_s=5", f"{role}.retry.timeout_s=5"])
    assert getattr(same, role).retry.timeout_s == 5
    with pytest.raises(ConfigError, match=rf"{role}.*timeout_s = 900 and retry.timeout_s = 30 .*give one of them"):
        load_config(write(tmp_path / "d.toml", MINIMAL), [f"{role}.timeout_s=900", f"{role}.retry.timeout_s=30"])
    target = load_config(write(tmp_path / "e.toml", MINIMAL + "[target]\ntimeout_s = 900\n")).target
    assert target.retry.timeout_s == 120  # the target's is one episode (an agent replay), its own key


def test_a_nights_optimizer_and_judge_calls_get_the_call_timeout() -> None:
    from skillsleep.core.night.settings import model_sections
    from skillsleep.core.night.user_config import SleepSection

    sections = model_sections(SleepSection(call_timeout=300))
    assert [(s.timeout_s, s.retry.timeout_s) for s in sections] == [(300, 300)] * 3
