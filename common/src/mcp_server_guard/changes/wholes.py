"""What is refused whole: the rules that keep a refusal from leaving anything half done — a project's own FIFO moved
with its directory, a file a refused FIFO would replace in a moved tree, the names of one file, the trees that hold a
refused path, what a refused entry would have replaced, and the entries of a new tree that may not land.

Not here: why a single path is refused (``changes.effects``)."""

from __future__ import annotations

from mcp_server_guard.changes.changeset import Change, ChangeSet

__all__ = ["refuse_whole"]


def refuse_whole(changes: ChangeSet, refused: dict[tuple[str, str], str]) -> None:
    """Extend ``refused`` ((root, path) -> why), judged path by path, so that nothing is half applied."""
    root = changes.root
    # A project's own FIFO, socket or device moved with its directory (``mv d d2``): its new name may not land, so its
    # old name does not go either — the project keeps it where it was.
    special = ("device", "fifo", "socket")
    barred_new = [
        c for c in changes.changes if c.kind in special and c.action != "delete" and (root, c.path) in refused
    ]
    gone_old = [c for c in changes.changes if c.kind in special and c.action == "delete"]
    new_trees = {c.path for c in changes.changes if c.action == "create" and c.kind == "dir" and not c.top}
    for made in barred_new:
        name = made.path.rsplit("/", 1)[-1]
        # Told from a FIFO deleted and another made (``rm a; mkfifo b``) by its name: a renamed directory's.
        for old in [c for c in gone_old if c.kind == made.kind and c.path.rsplit("/", 1)[-1] == name]:
            refused.setdefault((root, old.path), f"it moved to {made.path}, which may not land: it stays")
            # Its directory renamed with it (``mv F F2``): the old tree stays whole (the tree rules below), so the new
            # one is not made either — the rename is refused whole, never a copy of its files (red team 68 F7).
            if made.top and old.top and made.top != old.top and made.top in new_trees:
                refused.setdefault((root, made.top), f"it is {old.top} renamed, which keeps {old.path} (a "
                                   f"{made.kind} may not land): the rename is refused whole")  # fmt: skip
        # In place of a file of a tree the command moved (``mv d d2 && rm d2/f && mkfifo d2/f``): that file stays, so
        # the tree stays where it was, whole (the tree rules below), and its new place is not made.
        place = made.path[len(made.top) :] if made.top else ""
        for old in [c for c in changes.changes if place and c.action == "delete" and c.top and c.kind != made.kind]:
            if old.path == old.top + place and old.top != made.top:  # (a tree replaced in place: see below)
                what = refused[(root, made.path)]
                refused.setdefault(
                    (root, old.path), f"it would be replaced by {made.path} ({what}), which may not land"
                )
                refused.setdefault(
                    (root, made.top), f"it holds {made.path} ({what}) in place of {old.path}, which stays"
                )
    # Names of one file go together: a change through one reaches every other (its mode, its bytes).
    names: dict[int, list[Change]] = {}
    for change in changes.changes:
        if change.inode:
            names.setdefault(change.inode, []).append(change)
    for group in names.values():
        barred = next(((c.path, refused[(root, c.path)]) for c in group if (root, c.path) in refused), None)
        if barred is not None:
            for change in group:
                refused.setdefault((root, change.path), f"another name of this file is {barred[0]} ({barred[1]})")
    # A deletion or replacement of a tree that holds a refused path is refused whole; so is the tree it came with.
    for change in changes.changes:
        top = change.top
        if top and change.action == "delete" and (root, change.path) in refused and (root, top) not in refused:
            refused[(root, top)] = f"it holds {change.path} ({refused[(root, change.path)]})"
    for change in changes.changes:
        if change.top and change.action == "delete" and (root, change.top) in refused:
            refused.setdefault((root, change.path), refused[(root, change.top)])
    # What a refused entry would have replaced stays whole: nothing is half replaced.
    kept = {c.path for c in changes.changes if c.action == "create" and c.opaque and (root, c.path) in refused}
    for change in changes.changes:
        if change.top in kept and change.action == "delete":
            refused.setdefault((root, change.path), refused[(root, change.top)])
    # Nothing of a new tree that may not land lands (its entries are said as part of it).
    barred_trees = {c.path for c in changes.changes if c.action == "create" and (root, c.path) in refused}
    for change in changes.changes:
        if change.top in barred_trees and change.action != "delete":
            refused.setdefault((root, change.path), refused[(root, change.top)])
