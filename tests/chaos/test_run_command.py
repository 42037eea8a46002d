"""The command a chaos report says wrote it is one that runs the same search again."""

from chaos.run import make_command


def test_the_workflow_is_the_makefiles_workflow_variable_and_the_rest_chaos_args():
    assert make_command([]) == "make chaos"
    assert make_command(["--workflow", "express"]) == "make chaos WORKFLOW=express"
    assert (
        make_command(["--jobs", "1", "--workflow", "express", "--random", "60"])
        == "make chaos WORKFLOW=express CHAOS_ARGS='--jobs 1 --random 60'"
    )
