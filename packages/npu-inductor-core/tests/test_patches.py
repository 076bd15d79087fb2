"""The patch registry: a record once an installer patched, none when it says it did not, one
owner per upstream symbol."""

import types

import pytest

from npu_inductor_core import patches
from npu_inductor_core.patches import PatchConflict, upstream_patch


@pytest.fixture
def target():
    """A stand-in upstream module whose symbol installers replace; records forgotten after."""
    module = types.SimpleNamespace(fn=lambda: "upstream")
    made = []

    def installer(symbol, owner, **kwargs):
        def install():
            """Answer "ours" instead of upstream's. More text."""
            if getattr(module.fn, "ours", False):
                return False
            module.fn = lambda: "ours"
            module.fn.ours = True
            return True

        install.__qualname__ = f"install_{owner}_{len(made)}"
        made.append(
            upstream_patch(
                symbol, versions="torch 2.13", removed_by="a hook", owner=owner, **kwargs
            )(install)
        )
        return made[-1]

    yield module, installer
    for fn in made:
        patches.withdraw(fn)


def _mine(symbol):
    return [p for p in patches.active() if p.symbol == symbol]


def test_recorded_once_after_it_patched(target):
    module, installer = target
    install = installer("fake.module.fn", "npu-one")
    assert install.patches[0] in patches.declared() and not _mine(
        "fake.module.fn"
    )  # declared, not active
    assert install() is True and module.fn() == "ours"
    assert install() is False  # already installed: the second call patches nothing
    (p,) = _mine("fake.module.fn")
    assert (p.owner, p.versions, p.removed_by) == ("npu-one", "torch 2.13", "a hook")
    assert p.reason == 'Answer "ours" instead of upstream\'s.'  # the docstring's first sentence


def test_not_recorded_when_it_did_not_patch(target):
    module, installer = target
    module.fn = lambda: "already ours"
    module.fn.ours = True
    install = installer("fake.module.fn", "npu-one")
    assert install() is False and not _mine("fake.module.fn")


def test_second_owner_of_a_symbol_raises_before_patching(target):
    module, installer = target
    installer("fake.module.fn", "npu-one")()
    module.fn = lambda: "upstream again"  # the second owner would patch if it ran
    second = installer("fake.module.fn", "npu-two")
    with pytest.raises(PatchConflict, match="fake.module.fn is replaced by npu-one .* and npu-two"):
        second()
    assert module.fn() == "upstream again"  # refused before its installer ran
    assert [p.owner for p in _mine("fake.module.fn")] == ["npu-one"]


def test_same_owner_may_patch_one_symbol_from_two_installers(target):
    module, installer = target
    installer("fake.module.fn", "npu-one")()
    module.fn = lambda: "upstream again"
    installer("fake.module.fn", "npu-one")()
    assert [p.owner for p in _mine("fake.module.fn")] == ["npu-one", "npu-one"]


def test_withdrawn_after_restoring_upstream(target):
    _, installer = target
    install = installer("fake.module.fn", "npu-one")
    install()
    patches.withdraw(install)
    assert not _mine("fake.module.fn") and install.patches[0] in patches.declared()


def test_owner_defaults_to_the_distribution_of_the_installer():
    from npu_inductor_core import _compat

    (p,) = _compat.dispatch_compile_fx.patches
    assert p.owner == "npu-inductor-core" and p.symbol == "torch._inductor.compile_fx.compile_fx"
    assert p.installer == "npu_inductor_core._compat.dispatch_compile_fx"


def test_first_sentence():
    assert (
        patches.first_sentence("Torch 2.13 and e.g. this\n  one. Next.")
        == "Torch 2.13 and e.g. this one."
    )
    assert (
        patches.first_sentence("``torch._inductor.utils`` has no end")
        == "torch._inductor.utils has no end"
    )


def test_a_patch_needs_symbols_and_a_reason():
    with pytest.raises(ValueError):
        upstream_patch(versions="v", removed_by="r")
    with pytest.raises(ValueError, match="reason"):
        upstream_patch("x.y", versions="v", removed_by="r")(lambda: None)
