# nbgrader configuration of the sample cudalab course (run every nbgrader command from this folder).
# README.md beside this file explains each setting.
from nbgrader.preprocessors import (CheckCellMetadata, ClearOutput, DeduplicateIds, OverwriteCells,
                                    OverwriteKernelspec)

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

c.CourseDirectory.course_id = "cudalab-sample"
# The course root is the folder nbgrader runs in: source/, release/, submitted/, autograded/,
# feedback/ and gradebook.db live there.

# What replaces a solution region (### BEGIN SOLUTION ... ### END SOLUTION) in the student's copy.
# nbgrader picks the stub by the notebook's metadata.kernelspec.language, which is "cudalab";
# '#' starts a comment in a cudalab cell, so the stub runs and does nothing: the test cells below
# it then fail with a LookupError ("no %matmul result") until the student answers.
c.ClearSolutions.code_stub = {
    "cudalab": "# YOUR CODE HERE",
    "python": "# YOUR CODE HERE\nraise NotImplementedError()",
}
# The markers stay the defaults, matched anywhere in a line: write them as cudalab comments,
# "### BEGIN SOLUTION" / "### END SOLUTION" and "### BEGIN HIDDEN TESTS" / "### END HIDDEN TESTS".
c.ClearSolutions.begin_solution_delimeter = "BEGIN SOLUTION"
c.ClearSolutions.end_solution_delimeter = "END SOLUTION"
c.ClearHiddenTests.begin_test_delimeter = "BEGIN HIDDEN TESTS"
c.ClearHiddenTests.end_test_delimeter = "END HIDDEN TESTS"

# Autograding runs each notebook in the kernel named by the source notebook's
# metadata.kernelspec.name ("cudalab"; nbgrader writes it over whatever a submission says).
# Naming it here as well makes every notebook of the course run in cudalab.
c.Execute.kernel_name = "cudalab"
# Seconds one cell may run before nbgrader interrupts it (that cell then scores 0).
# The kernel has its own limit, CUDALAB_CELL_TIMEOUT (see README.md): keep it below this one.
c.Execute.timeout = 120
# Kernel start-up: the cudalab kernel is up in well under a second.
c.Execute.startup_timeout = 60

# What a submission cannot change. Before running a submission, autograde writes every locked cell
# (the questions and the test cells) over with the source version, its points and its checksum, and
# clears every output: an edited, unlocked, re-typed or re-scored test cell and forged outputs count
# for nothing. Two gaps remain in nbgrader's defaults, closed here:
# - a deleted test cell (or one whose nbgrader metadata was removed) would get no score and wait for
#   manual grading: put it back after the cell before it, and grade it as any other.
c.OverwriteCells.add_missing_cells = True


class DropDuplicateIds(DeduplicateIds):
    """A copied test cell (JupyterLab copies a cell's metadata) makes two cells with one grade_id.
    nbgrader keeps the last as the test cell and leaves "nbgrader": {} on the other, which
    CheckCellMetadata then reads as metadata of an old version: autograde stops there for every
    student after this one (jupyter/nbgrader#1083). Removing the empty metadata makes the copy an
    ordinary cell; the test cell kept is written over with the source version as usual."""

    def preprocess_cell(self, cell, resources, index):
        cell, resources = super().preprocess_cell(cell, resources, index)
        if cell.metadata.get("nbgrader") == {}:
            del cell.metadata["nbgrader"]
        return cell, resources


# - the copy: nbgrader's own list of sanitizing steps, with the deduplication above.
c.Autograde.sanitize_preprocessors = [ClearOutput, DropDuplicateIds, OverwriteKernelspec, OverwriteCells,
                                      CheckCellMetadata]
