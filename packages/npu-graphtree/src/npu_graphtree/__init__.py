"""npu_graphtree: see this package's README for what it owns."""


def register() -> None:
    """Component hook of the ``npu_inductor.components`` entry-point group.

    Idempotent. Nothing to register yet: this component's features arrive with issue #6.
    """
