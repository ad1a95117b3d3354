# nbgrader configuration of the sample cudalab course (run every nbgrader command from this folder).
# README.md beside this file explains each setting.
from nbgrader.preprocessors import (CheckCellMetadata, ClearHiddenTests, ClearMarkScheme, ClearOutput,
                                    ClearSolutions, ComputeChecksums, DeduplicateIds, IncludeHeaderFooter,
                                    InstantiateTests, LockCells, OverwriteCells, OverwriteKernelspec,
                                    SaveCells)

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

c.CourseDirectory.course_id = "cudalab-sample"
# The course root is the folder nbgrader runs in: source/, release/, submitted/, autograded/,
# feedback/ and gradebook.db live there.

# What replaces a solution region (BEGIN SOLUTION ... END SOLUTION) in the student's copy.
# nbgrader 0.9 matches the markers anywhere in a line, one pair for every language, so each cell
# writes them as its own comments: "### BEGIN SOLUTION" in a cudalab cell ('#' starts a comment),
# "// BEGIN SOLUTION" in the C++ body of a %%kernel cell. The stub, though, is one per notebook:
# nbgrader picks it by metadata.kernelspec.language ("cudalab"), and "# YOUR CODE HERE" in C++ is a
# preprocessor error ("invalid preprocessing directive"). KernelCellStubs (below) gives the body of
# a %%kernel cell the "cuda" stub instead, a comment in C++, so the released kernel compiles (and
# computes nothing: its test cells then fail on the result).
c.ClearSolutions.code_stub = {
    "cudalab": "# YOUR CODE HERE",      # a magic cell: runs and does nothing; its tests fail with LookupError
    "cuda": "// YOUR CODE HERE",        # inside a %%kernel cell's C++
    "python": "# YOUR CODE HERE\nraise NotImplementedError()",
}
c.ClearSolutions.begin_solution_delimeter = "BEGIN SOLUTION"
c.ClearSolutions.end_solution_delimeter = "END SOLUTION"
c.ClearHiddenTests.begin_test_delimeter = "BEGIN HIDDEN TESTS"
c.ClearHiddenTests.end_test_delimeter = "END HIDDEN TESTS"


class KernelCellStubs(ClearSolutions):
    """ClearSolutions with the stub chosen per cell: a solution region inside a %%kernel cell is C++
    and gets code_stub["cuda"]; every other cell gets the notebook language's stub, as before. (A
    whole solution cell without markers is replaced by the notebook's stub either way.)"""

    def _replace_solution_region(self, cell, language):
        first = cell.source.lstrip().split("\n", 1)[0]
        if cell.cell_type == "code" and first.startswith("%%kernel") and "cuda" in self.code_stub:
            language = "cuda"
        return super()._replace_solution_region(cell, language)


# nbgrader's own list of generate_assignment steps, with KernelCellStubs in place of ClearSolutions
# (it reads the ClearSolutions settings above: traitlets applies a class's settings to its subclasses).
c.GenerateAssignment.preprocessors = [
    IncludeHeaderFooter, InstantiateTests, LockCells, KernelCellStubs, ClearOutput, CheckCellMetadata,
    ComputeChecksums, SaveCells, ClearHiddenTests, ClearMarkScheme, ComputeChecksums, CheckCellMetadata,
]

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
