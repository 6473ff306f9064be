"""The rules schema: every SGLang-specific name lives in rules/<profile>.toml, checked by these models.

The code knows mechanisms (roots, predicates, registries, drop patterns); the rules file knows names.
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Profile(_Strict):
    name: str
    description: str
    package: str = Field(description="The import package the upstream tree holds, e.g. sglang.")
    extra_packages: list[str] = Field(default_factory=list,
                                      description="Other import packages in the tree (sgl_kernel ...).")


class Root(_Strict):
    module: str
    reason: str


class AllowedReference(_Strict):
    """Code lines that name another platform (or model family) on purpose (issue 17's allowed lists):
    apply.md counts them apart, each with this reason, from the references left to fold."""

    files: list[str] = Field(description="Globs of work-tree paths (`python/sglang/kernels/spec.py`).")
    pattern: str = Field("", description="A regex the line's code must match; empty: every line of the files.")
    reason: str


class Architectures(_Strict):
    keep: list[str]
    reason: str
    served: list[str] = Field(default_factory=list,
                              description="Dotted names (globs) of the collections that hold the served model's "
                                          "architectures (`*.hf_config.architectures`): `\"Qwen2ForCausalLM\" in "
                                          "self.hf_config.architectures` is False when the profile removes it.")
    model_types: list[str] = Field(default_factory=list,
                                   description="The `model_type` values (config.json; globs) of the checkpoints the kept "
                                               "architectures serve: a test of the served model's model_type for "
                                               "any other value is False.")
    model_type_at: list[str] = Field(default_factory=list,
                                     description="Dotted names (globs) that hold the served model's model_type "
                                                 "(`*.hf_config.model_type`; `getattr(x, \"model_type\", None)` "
                                                 "reads the place `x.model_type`).")
    readers: list[str] = Field(default_factory=list,
                               description="Functions that read an attribute as `getattr(obj, name, default)` does "
                                           "(`getattr` always counts): `_cfg_get(cfg, \"architectures\", [])` reads "
                                           "the place `cfg.architectures`, when its default holds no name.")
    other_families: list[str] = Field(default_factory=list,
                                      description="Words that name model families the profile removes (`qwen`, "
                                                  "`gpt_oss`): code lines of the work tree naming one are counted "
                                                  "in apply.md (issue 17's measure; a model_type of model_types "
                                                  "that starts with one, `kimi_k2`, is not that family), and an "
                                                  "attribute named for one may fold as a constant (`self.is_gpt_oss`).")
    allowed: list[AllowedReference] = Field(default_factory=list,
                                            description="Other-family references the kept tree keeps on purpose "
                                                        "(chat templates a user may pick for any checkpoint).")


class Predicate(_Strict):
    """A name whose value on NVIDIA CUDA is known. Matches `name()`, `name`, `x.name()` and `x.name`."""

    name: str = Field(description="Exact name or a glob such as *aiter*.")
    value: bool
    reason: str
    calls_only: bool = Field(False, description="Fold only when called (`is_hip()`), not bare names.")
    with_args: bool = Field(False, description="Calls with arguments fold too (`use_intel_amx_backend(layer)`), "
                                               "when the arguments have no side effects.")
    returns_none: bool = Field(False, description="The call returns None (a feature's config lookup such as "
                                                  "`mambaish_config(cfg)`): `x is None` folds to True too. "
                                                  "`value` must be false (None is falsy).")


class PlatformStrings(_Strict):
    """String compares that name another platform (`device == "npu"`): folded by ==, !=, in, not in."""

    strings: list[str]
    reason: str
    device_keys: list[str] = Field(default_factory=list,
                                   description="Keys dropped from a device-keyed table (a dict literal with a "
                                               "platform-string key), though not platform strings elsewhere.")
    families: list[str] = Field(default_factory=list,
                                description="Prefixes of another vendor's chip names: a word that is one followed "
                                            "by digits names that platform too (`gfx` -> gfx942, gfx1250).")


class FixedParameter(_Strict):
    """A parameter every caller passes the same platform value (`try_fused_hc_post_pre(...,
    _is_gfx95_supported)`): folded like a predicate inside that function. The plan checks each call
    in the tree against the rule and fails when one passes anything else. Under [[features]]: every
    caller the cut leaves (a call inside a removed registry key's function does not count)."""

    function: str = Field(description="`module:qualname` of the function (`pkg.mod:Class.method`); "
                                      "`Class.__init__` means the calls `Class(...)`.")
    name: str = Field(description="The parameter.")
    value: bool
    reason: str
    since: str = Field("", description="The first upstream release that has the parameter; older releases "
                                       "plan without the rule.")


class Platform(_Strict):
    predicates: list[Predicate]
    strings: PlatformStrings
    methods: list[str] = Field(description="Per-platform methods removed with their dispatch entries.")
    functions: list[str] = Field(default_factory=list,
                                 description="Names (globs) of functions and methods that serve another platform "
                                             "(aiter_w8a8_block_fp8_linear): remove_platform_bound removes one when "
                                             "its body uses a name only another platform binds.")
    classes: list[str] = Field(default_factory=list,
                               description="Names (globs) of classes that exist only for another platform, defined "
                                           "inside shared modules (AWQAscendMoEScheme): removed with their imports.")
    packages: list[str] = Field(description="Third-party packages that exist only on other platforms.")
    attributes: list[str] = Field(default_factory=list,
                                  description="Attribute names only another platform's objects carry: "
                                              "`hasattr(x, NAME)` is False on CUDA.")
    parameters: list[FixedParameter] = Field(default_factory=list,
                                             description="Parameters whose every caller passes a platform value.")
    env_flag_reads: list[str] = Field(default_factory=list,
                                      description="Methods of an env-flag registry entry that read its value "
                                                  "(`envs.NAME.get()`): such a call is the variable NAME, which a "
                                                  "predicate of that name folds.")
    env_flags: list[str] = Field(default_factory=list,
                                 description="Calls whose result depends on env only (kept as is in and/or).")
    fact_objects: list[str] = Field(default_factory=list,
                                    description="Objects whose attributes are the machine's platform facts "
                                                "(`get_platform()`: `get_platform().is_hip` is `is_hip()`): an "
                                                "attribute read on one folds like a call of the predicate of its name.")
    device_probes: list[str] = Field(default_factory=list,
                                     description="Dotted calls that ask whether a device is present, `*` standing for "
                                                 "a platform word of [platform.strings] (`torch.*.is_available`: "
                                                 "`torch.xpu.is_available()` is False on CUDA).")
    build_attributes: list[str] = Field(default_factory=list,
                                        description="Dotted reads of the build's version of a platform's stack, `*` "
                                                    "a platform word (`torch.version.*`: torch.version.hip is None on "
                                                    "a CUDA build).")
    capability_keywords: list[str] = Field(default_factory=list,
                                           description="Keyword arguments that say which devices a record serves "
                                                       "(`KernelSpec(capabilities=...)`): a record naming only other "
                                                       "platforms' devices is never dispatched on CUDA.")
    backend_methods: str | None = Field(None,
                                        description="`module:NAME` of the table mapping each kernel backend to the "
                                                    "method that runs it (fused_op's `BACKEND_METHODS`): a class whose "
                                                    "capability_keywords attribute gives a backend only other "
                                                    "platforms' devices never runs that method on CUDA.")
    choices_variables: list[str] = Field(default_factory=list,
                                         description="Globs of module-level CLI choices lists (`*_CHOICES`): a "
                                                     "string one holds that the vocabulary names goes.")
    allowed: list[AllowedReference] = Field(default_factory=list,
                                            description="Platform references the kept tree keeps on purpose.")
    pure_methods: list[str] = Field(default_factory=list,
                                    description="Method names (globs) known to have no side effects: an operand "
                                                "calling one may be dropped when a platform predicate decides the test. "
                                                "`name()`: with no arguments only; `name(\"\")`: with string literals only.")


class FeatureValue(_Strict):
    """A name that never holds some values once a feature is cut (`fa_impl_ver` is never 4 without the
    "fa4" backend): `name == v` folds to False, `name != v` to True, `name in (v, ...)` likewise."""

    @model_validator(mode="after")
    def _some_value(self) -> "FeatureValue":
        if not self.never and not self.never_members and not self.none:
            raise ValueError(f"features.values {self.name!r}: give never, never_members or none")
        return self

    name: str = Field(description="Variable, attribute (`self.fa_impl_ver`) or parameter name.")
    never: list[int | str] = Field(default_factory=list, description="Literals the name never holds.")
    never_members: list[str] = Field(default_factory=list,
                                     description="Enum members it never holds, dotted as code writes them "
                                                 "(`AttentionArch.SSM`): compared by the reference, not a string.")
    none: bool = Field(False, description="The name holds None wherever kept code reads it (every binding is a "
                                         "feature predicate's None, `qsa_profile = parse_qsa_profile(cfg)`): "
                                         "`x is None` is True, `x is not None` False.")
    modules: list[str] = Field(default_factory=list,
                               description="Module patterns where a *parameter* of that name folds too (every "
                                           "caller passing the value is gone); elsewhere parameters stay.")
    reason: str


class FeatureConstant(_Strict):
    """A constant a kept module imports from a removed feature module: the import becomes `name = value`."""

    module: str = Field(description="The removed module (dotted).")
    name: str = Field(description="The name it defines (as imported; an `as` alias keeps its alias).")
    value: int | str | float | bool
    reason: str


class Feature(_Strict):
    """A feature the profile's users do not use (a product decision): its modules are [[remove]] rules
    of category "feature"; here are the tests that then fold, as the platform predicates do."""

    name: str
    reason: str
    predicates: list[Predicate] = Field(default_factory=list)
    values: list[FeatureValue] = Field(default_factory=list)
    calls: list[str] = Field(default_factory=list,
                             description="Functions of removed feature modules that only set the feature up: "
                                         "a statement that is just a call of one (pure arguments) goes.")
    constants: list[FeatureConstant] = Field(default_factory=list)
    classes: list[str] = Field(default_factory=list,
                               description="Classes (globs) of kept modules that serve the feature alone: removed "
                                           "with their table entries (remove_feature_classes), as "
                                           "platform.classes are.")
    parameters: list[FixedParameter] = Field(default_factory=list,
                                             description="Parameters only removed callers pass another value: "
                                                         "folded inside their function in the features batch.")


class Registry(_Strict):
    """A string-keyed registry and which keys stay.

    kind:
      module_scan: a pkgutil scan over `package`, done by `scanner`, collecting `attribute` (EntryClass);
                   modules whose attribute names a kept architecture stay.
      decorator:   functions or classes in `module` decorated `@decorator("key")` (a class: the config
                   parsers' `@register_model_config_parser("mistral")`); a removed key's function or
                   class goes, and imports inside it keep nothing. A module-level call that registers the
                   same way (`AttentionBackendRegistry.register("aiter", handler)`, `decorator` naming the
                   callee as written) goes too; the plan reads only decorations, so such a registry
                   `follows` another one for its keys.
      dict:        a dict literal `variable` (or Class.attr) in `module`; imports of names used only as
                   values of removed keys keep nothing.
      choices:     argparse `choices=` lists, and other lists that pick a key of a registry (with
                   `element_key`, calls keyed by a keyword); pruned by the codemod stage only. `variable`
                   names a list/tuple/set variable (`ATTENTION_BACKEND_CHOICES`) or an option
                   (`mm_attention_backend`, `--mm-attention-backend`) whose inline `choices=[...]` is pruned.
      package_exports: a package `module` whose __init__ imports submodules to re-export them (model
                   configs); keys are the submodule names, imports of removed ones keep nothing. With
                   `decorator`, importing a submodule registers functions per architecture
                   (`@_register_for("DeepseekV3ForCausalLM", ...)`): one that registers none of
                   [architectures].keep goes.
      records:     an inventory of records built by the call `record` (`KernelSpec(op="x.y",
                   target="pkg.mod:fn")`), each keyed by its `element_key` keyword and naming the module
                   that serves it by a "module:attr" string; the inventory loads that module only when
                   a caller asks one of `lookups` for the key (`get_kernel("x.y")`). A key no module asks
                   for with a literal is removed (there is no `keep` list: asking is keeping), so its
                   record's module keeps nothing alive; one ask with a computed key keeps every key.
    A registry with `follows` drops the keys the plan removes from that other registry (a dict or
    choices list that mirrors it, e.g. draft backend maps or CLI choices); the planner leaves it alone.
    """

    name: str
    kind: Literal["module_scan", "decorator", "dict", "choices", "package_exports", "records"]
    module: str = ""
    package: str = ""
    scanner: str = ""
    attribute: str = ""
    decorator: str = ""
    variable: str = ""
    keep: list[str] = Field(default_factory=list)
    keep_all_others: bool = Field(False, description="Keys not listed are unknown: keep them and report.")
    follows: str = Field("", description="Drop the keys the plan removes from this other registry.")
    element_key: str = Field("", description="choices whose elements are calls: an element's key is the string "
                                             "of this keyword (`DetectionRule(name=..., value=\"qwen3\")`); "
                                             "records: the record call's keyword that holds its key (`op`).")
    record: str = Field("", description="records: the call that builds one record (`KernelSpec`).")
    lookups: list[str] = Field(default_factory=list,
                               description="records: what a caller asks for a key with, as `module:name` "
                                           "(`sglang.kernels.selector:get_kernel`) or `module:object.method` "
                                           "(`sglang.kernels.registry:registry.get`); the key is the first "
                                           "argument. Calls inside these modules pass a caller's key on.")
    held_at: list[str] = Field(default_factory=list,
                               description="Dotted names (globs) of the places that hold the key a deployment picked "
                                           "(`*.tool_call_parser`; a call without arguments reads as `f()`, so "
                                           "`get_serving().tool_call_parser` matches too): a test of one for a key "
                                           "the plan removes is False, since no kept entry answers to it.")
    reason: str

    @model_validator(mode="after")
    def _records_are_complete(self) -> "Registry":
        if self.kind == "records" and not (self.record and self.element_key and self.lookups):
            raise ValueError(f"registry {self.name}: kind records needs record, element_key and lookups")
        return self

    @property
    def names_option(self) -> bool:
        """A choices registry of an option (`mm_attention_backend`, `--lora-backend`): it applies wherever
        the option is declared, not only in `module` (0.5.23 moved ServerArgs' fields to arg_groups)."""
        return self.kind == "choices" and (self.variable.startswith("--") or self.variable.lstrip("_").islower())


class ModuleRule(_Strict):
    """A module pattern (dotted, `*` for one part, `**` for a subtree) kept or removed with a reason."""

    pattern: str
    reason: str
    category: str = ""
    since: str = Field("", description="Keep rules: the first upstream release the rule applies to (kept "
                                       "code needs the target from then on); older releases plan without it.")
    while_imported: bool = Field(False, description="Keep rules: the module is needed only while kept code "
                                 "imports it (code a batch's folds may untangle): the symbol batch's module cut "
                                 "judges it without the rule, so once no kept module imports it it goes.")


class Batch(_Strict):
    """One ordered batch: which removed files it deletes (by removal category) and what codemods run."""

    name: str
    risk: Literal["low", "medium", "high"]
    categories: list[str] = Field(default_factory=list)
    codemods: list[str] = Field(default_factory=list)
    description: str
    features: bool = Field(False, description="Its folding codemods fold the rules' [[features]] predicates too "
                                              "(earlier batches fold only the platform's).")


class DataFiles(_Strict):
    """How non-Python files are judged."""

    drop_suffixes: list[str] = Field(default_factory=list,
                                     description="Suffixes never kept (bytecode, build leftovers).")
    keep_files: list[str] = Field(default_factory=list,
                                  description="Globs (tree paths) of files kept whatever the graph says.")


class Kernels(_Strict):
    """What the kernel manifest (kernels.txt) judges: compiled ops, their binaries, JIT sources, Triton modules."""

    packages: list[str] = Field(default_factory=list,
                                description="Prebuilt kernel packages (import names): their top-level functions "
                                            "are the wrappers, their .so files the binaries.")
    op_namespaces: list[str] = Field(default_factory=list,
                                     description="torch.ops namespaces whose ops the manifest lists "
                                                 "(`torch.ops.sgl_kernel.rmsnorm`).")
    jit_roots: list[str] = Field(default_factory=list,
                                 description="Folders (relative to an import root) of the JIT kernels' C++/CUDA "
                                             "sources; a release may have any of them.")
    jit_suffixes: list[str] = Field(default_factory=list, description="Suffixes of the JIT sources judged.")
    external: list[str] = Field(default_factory=list,
                                description="Third-party kernel packages whose entry points kept code imports "
                                            "(listed, never removed: they are not in the tree).")
    reason: str = ""


class RequirementKeep(_Strict):
    """A distribution kept in python/pyproject.toml though no kept file imports it by name."""

    name: str = Field(description="The distribution as pyproject names it (any spelling; compared canonically).")
    reason: str
    when: list[str] = Field(default_factory=list,
                            description="Modules (dotted, a file or a package) or tree paths: kept only while "
                                        "one of them is in the tree (the code that needs it); empty: always.")


class Requirements(_Strict):
    """How `shrink requirements` prunes [project].dependencies (the rest follows from imports)."""

    keep: list[RequirementKeep] = Field(default_factory=list)
    target: dict[str, str] = Field(default_factory=dict,
                                   description="The PEP 508 marker environment of the machine the pruned tree runs "
                                               "on: declared requirements and their own are read for it (never for "
                                               "the machine shrinker runs on).")


class ReportLayers(_Strict):
    """What `shrink report layers` calls layers: the folders of `root`, with `split` ones split a level further."""

    root: str = Field(description="Tree path whose sub-folders are the layers (`python/sglang/srt`).")
    split: list[str] = Field(default_factory=list, description="Layers shown one level deeper (`layers`).")
    reason: str


class ConfirmedRemoval(_Strict):
    key: str = Field(description="`registry:key`, e.g. `models:KimiK3ForConditionalGeneration`.")
    reason: str = Field(min_length=1, description="Why it goes although kept code names it.")


class Regen(_Strict):
    """What `shrink regen` takes as evidence that a new upstream name needs a person.

    A registry's `keep` list is an allowlist: a new key it does not name is removed and reported as
    decided. Only when kept code in `signal_paths` selects the key (assigns, returns or defaults to its
    string) is a person asked."""

    signal_paths: list[str] = Field(default_factory=list,
                                    description="Globs (tree paths): kept files whose selecting a new registry "
                                                "key is a reason to doubt its removal (the kept architectures' "
                                                "modules, ServerArgs ...).")
    signal_modules: list[str] = Field(default_factory=list,
                                      description="Dotted module patterns of kept-architecture code: a new "
                                                  "architecture registered by such a module, or by one importing "
                                                  "it, is a reason to doubt its removal.")
    family_words: list[str] = Field(default_factory=list,
                                    description="Words naming the profile's own model family (`deepseek`): a new "
                                                "architecture built on kept-architecture code is asked about only "
                                                "when its key or module names one; another family's model built "
                                                "on it (Kimi K3, GLM-5 Next) is removed, reported with that "
                                                "evidence. Empty: every such architecture is asked about.")
    draft_suffixes: list[str] = Field(default_factory=list,
                                      description="Endings of a draft (MTP) model's architecture name "
                                                  "(`NextN`): a draft of a confirmed-removed architecture is "
                                                  "settled with it.")
    confirmed_removed: list[ConfirmedRemoval] = Field(
        default_factory=list, description="Registry keys a person ruled removed although kept code names them, "
                                          "one line each (`{key = \"registry:key\", reason = \"...\"}`), each "
                                          "settling one question.")
    reason: str = ""


class Rules(_Strict):
    profile: Profile
    roots: list[Root]
    architectures: Architectures
    platform: Platform
    registries: list[Registry] = Field(default_factory=list)
    features: list[Feature] = Field(default_factory=list)
    remove: list[ModuleRule] = Field(default_factory=list)
    keep: list[ModuleRule] = Field(default_factory=list)
    data: DataFiles = DataFiles()
    kernels: Kernels = Kernels()
    batches: list[Batch] = Field(default_factory=list)
    requirements: Requirements = Requirements()
    report_layers: Optional[ReportLayers] = None
    regen: Regen = Regen()
    source: Optional[str] = Field(None, description="The rules file (set by the loader).")

    def registry(self, name: str) -> Registry:
        for reg in self.registries:
            if reg.name == name:
                return reg
        raise KeyError(name)
