"""The GPU cases as data (cases.toml): server launches, their request groups, timing runs."""

from __future__ import annotations

import json
import random
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

CASES_FILE = Path(__file__).with_name("cases.toml")


@dataclass
class Request:
    name: str
    endpoint: str  # /generate | /v1/chat/completions
    body: dict
    stream: bool = False


@dataclass
class Launch:
    name: str
    part: int
    model: str
    flags: list[str]
    groups: list[str]
    gpus: int = 1  # GPUs the launch needs (--tp-size); a machine with fewer skips it as not run
    startup_timeout_s: float | None = None  # launch -> /health 200 limit, when not [server]'s
    # Environment both trees' servers start with (only [server].compile_only_env's knobs)
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Cases:
    raw: dict
    launches: list[Launch] = field(default_factory=list)

    @property
    def server_flags(self) -> list[str]:
        return list(self.raw["server"]["flags"])

    @property
    def timing(self) -> dict:
        return self.raw["timing"]

    def model(self, name: str) -> dict:
        return self.raw["models"][name]

    def parts(self) -> list[int]:
        """Every part number: the launches' and the timing's."""
        return sorted({launch.part for launch in self.launches} | {int(self.timing["part"])})

    def launch(self, name: str) -> Launch:
        for launch in self.launches:
            if launch.name == name:
                return launch
        raise KeyError(name)

    def requests(self, group: str) -> list[Request]:
        if group == "generate":
            return generate_requests(self.raw["generate"])
        if group == "chat":
            return chat_requests(self.raw["chat"])
        raise KeyError(f"unknown request group {group!r}")


def load_cases(path: Path = CASES_FILE) -> Cases:
    raw = tomllib.loads(Path(path).read_text())
    cases = Cases(raw=raw)
    for item in raw.get("launch", []):
        allowed = set(raw.get("server", {}).get("compile_only_env", []))  # see cases.toml [server]
        unknown = sorted(set(item.get("env", {})) - allowed)
        if unknown:
            raise ValueError(f"launch {item['name']}: env {', '.join(unknown)} is not a compile-only knob "
                             f"(allowed: {', '.join(sorted(allowed)) or 'none'})")
        cases.launches.append(Launch(name=item["name"], part=int(item["part"]), model=item["model"],
                                     flags=list(item["flags"]), groups=list(item["groups"]),
                                     gpus=int(item.get("gpus", 1)),
                                     startup_timeout_s=item.get("startup_timeout_s"),
                                     env={str(k): str(v) for k, v in item.get("env", {}).items()}))
    return cases


def prompts(spec: dict) -> list[list[int]]:
    """Fixed input ids: one list per length, drawn from spec's seed in [first_id, last_id]."""
    rng = random.Random(spec["seed"])
    return [[rng.randint(spec["first_id"], spec["last_id"]) for _ in range(n)] for n in spec["lengths"]]


def generate_requests(spec: dict) -> list[Request]:
    """Greedy /generate: the first four prompts one by one, then batches of 3 and 8.

    Every request asks for logprobs with the top `top_logprobs_num` alternatives at each output
    position; the single requests also ask for the prompt's (from `logprob_start_len`).
    """
    ps = prompts(spec)
    sampling = {"temperature": 0.0, "max_new_tokens": spec["max_new_tokens"], "ignore_eos": True}
    logprobs = {"return_logprob": True}
    if spec.get("top_logprobs_num"):
        logprobs["top_logprobs_num"] = int(spec["top_logprobs_num"])
    single = dict(logprobs)
    if spec.get("logprob_start_len") is not None:
        single["logprob_start_len"] = int(spec["logprob_start_len"])
    reqs = [Request(f"gen-single-{i}", "/generate", {"input_ids": ps[i], "sampling_params": sampling, **single})
            for i in range(min(4, len(ps)))]
    reqs.append(Request("gen-batch-3", "/generate", {"input_ids": ps[:3], "sampling_params": sampling, **logprobs}))
    reqs.append(Request(f"gen-batch-{len(ps)}", "/generate",
                        {"input_ids": ps, "sampling_params": sampling, **logprobs}))
    return reqs


def chat_requests(spec: dict) -> list[Request]:
    tools = json.loads(spec["tools"])
    reqs = []
    for item in spec["request"]:
        body = {"model": "tiny", "temperature": 0.0, **json.loads(item["body"])}
        if item.get("tools"):
            body["tools"] = tools
        if item.get("stream"):
            body["stream"] = True
        reqs.append(Request(item["name"], "/v1/chat/completions", body, stream=bool(item.get("stream"))))
    return reqs
