"""A steward in a real browser: log in, preview a bind, supersede a leftover duplicate
through the action form, and see it leave the task list (headless Debian Chromium)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from tasks.models import Task
from tests.factories import create_task
from tests.conftest import load_agent_lab
from tests.factories import member_with_key

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SHOTS = Path(__file__).resolve().parent.parent / "screenshots"


@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,900"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.implicitly_wait(5)
    SHOTS.mkdir(exist_ok=True)
    yield driver
    driver.quit()


def test_a_steward_previews_a_bind_and_supersedes_a_duplicate(live_server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    wait = WebDriverWait(browser, 15)

    space = load_agent_lab()
    steward, _ = member_with_key(space, "steward")
    keep = create_task(space=space, actor=steward, title="Retry policy")
    dup = create_task(space=space, actor=steward, title="retry policy (again)")
    User.objects.create_superuser("ada", "ada@example.com", "correct horse")

    browser.get(f"{live_server.url}/admin/login/")
    browser.find_element(By.NAME, "username").send_keys("ada")
    browser.find_element(By.NAME, "password").send_keys("correct horse")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    wait.until(lambda d: "Spaces administration" in d.title)  # the admin reads as this product

    browser.get(f"{live_server.url}/admin/spaces/space/{space.pk}/bind/")
    browser.find_element(By.NAME, "title").send_keys("Build a benchmark for code review agents")
    browser.find_element(By.CSS_SELECTOR, "#bind-preview input[type=submit]").click()
    wait.until(lambda d: d.find_elements(By.ID, "decision"))
    assert "T1" in browser.find_element(By.ID, "decision").text
    scores = browser.find_element(By.ID, "scores").text
    assert "4/9" in scores and "free" in scores  # each slot with its title, and whether a task holds it
    browser.save_screenshot(str(SHOTS / "bind-preview.png"))

    browser.get(f"{live_server.url}/admin/tasks/task/")
    browser.find_element(By.CSS_SELECTOR, f"input[name=_selected_action][value='{dup.pk}']").click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("supersede")
    browser.find_element(By.CSS_SELECTOR, "button[name=index]").click()
    wait.until(lambda d: d.find_elements(By.ID, "supersede-form"))
    assert browser.find_elements(By.CSS_SELECTOR, f"#survivors option[value='{keep.number}']")  # the picker
    browser.find_element(By.NAME, "surviving_task").send_keys(str(keep.number))
    browser.save_screenshot(str(SHOTS / "supersede-form.png"))
    browser.find_element(By.CSS_SELECTOR, "#supersede-form input[name=apply]").click()
    wait.until(lambda d: "Superseded 1 task" in d.page_source)
    browser.save_screenshot(str(SHOTS / "task-list-after.png"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
    assert len(rows) == 1 and "Retry policy" in rows[0].text
    assert Task.objects.get(pk=dup.pk).status == "superseded"


def seed_a_working_team(space):
    """A space mid-afternoon: work at every stage, held by a few agents."""
    from spaces.models import Post
    from tasks import attempts, claims

    planner, _ = member_with_key(space, "steward", "planner")
    agents = {name: member_with_key(space, "writer", name)[0] for name in ("ana", "bo", "cy")}
    make = lambda title, **kw: create_task(space=space, actor=planner, title=title, **kw)  # noqa: E731
    harness = make("Build a benchmark for code review agents", priority=1, labels=["eval"])
    make("Token spend dashboard", priority=2, labels=["ui", "cost"])
    retry = make("Retry and backoff policy for tool calls", priority=0, labels=["api"])
    schema = make("Add a priority column to the runs table", priority=1, labels=["db"])
    make("Migrate old runs to the new schema", priority=1, labels=["db"], blocked_by=[schema.number])
    make("Publish the evaluation report", priority=2, labels=["docs"], blocked_by=[harness.number])
    make("Write the onboarding guide", priority=3, labels=["docs"])
    make("Rotate the staging API keys", priority=2, labels=["ops"])
    claims.claim_task(space=space, member=agents["ana"], number=harness.number)
    claims.claim_task(space=space, member=agents["bo"], number=schema.number)
    claims.claim_task(space=space, member=agents["cy"], number=retry.number)
    post = Post.objects.create(space=space, author=agents["cy"], body="Exponential backoff, capped at 30 s.")
    attempts.mark_done(task=Task.objects.get(pk=retry.pk), member=agents["cy"], post_id=post.pk)
    return planner, agents


def test_the_board_updates_itself_as_an_agent_team_works(live_server, browser):
    """Log in, open the board, then create, claim, deliver and check a task through the API while the
    page is open: each change shows within ten seconds, with no reload and no redraw of other cards."""
    import httpx
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    space = load_agent_lab()
    planner, agents = seed_a_working_team(space)
    _, ana_key = member_with_key(space, "writer", "dee")
    _, checker_key = member_with_key(space, "writer", "eve")
    User.objects.create_superuser("ada", "ada@example.com", "correct horse")
    api = f"{live_server.url}/v1/spaces/agent-lab"

    def call(key: str, method: str, path: str, body=None, expect: int | None = None):
        response = httpx.request(method, api + path, json=body, headers={"Authorization": f"Bearer {key}"}, timeout=10)
        assert response.status_code == expect if expect else response.status_code < 300, response.text
        return response.json()

    browser.get(f"{live_server.url}/admin/login/?next=/board/agent-lab/")
    browser.find_element(By.NAME, "username").send_keys("ada")
    browser.find_element(By.NAME, "password").send_keys("correct horse")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    wait = WebDriverWait(browser, 10)
    wait.until(lambda d: d.find_elements(By.ID, "card-7"))
    # The page must never reload (the marker goes) nor redraw a card that did not change.
    browser.execute_script("window.__marker = 'kept'; document.getElementById('card-7').__kept = true;")

    def in_column(number: int, column: str) -> None:
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f"#cards-{column} #card-{number}"),
                   f"task {number} did not reach {column} within ten seconds")
        assert browser.execute_script("return window.__marker") == "kept", "the page reloaded"
        assert browser.execute_script("return document.getElementById('card-7').__kept === true"), \
            "an unchanged card was redrawn"

    created = call(ana_key, "POST", "/tasks", {"title": "Write the release notes", "priority": 0, "labels": ["docs"]})
    number = created["number"]
    in_column(number, "ready")
    call(ana_key, "POST", "/next", {"number": number})
    in_column(number, "claimed")
    assert "dee" in browser.find_element(By.ID, f"card-{number}").text
    post = call(ana_key, "POST", "/posts", {"body": "Release notes drafted."})
    call(ana_key, "POST", f"/tasks/{number}/done", {"post": post["id"]})
    in_column(number, "in_review")
    assert "attempt 1 waiting" in browser.find_element(By.ID, f"card-{number}").text
    call(checker_key, "POST", f"/tasks/{number}/attempts/1/confirm")
    in_column(number, "done")
    call(ana_key, "POST", "/tasks", {"title": "Rotate the staging API keys"}, expect=409)  # a duplicate
    wait.until(lambda d: d.find_element(By.ID, "fig-duplicates").text == "1")
    assert browser.execute_script("return window.__marker") == "kept"
    browser.save_screenshot(str(SHOTS / "board.png"))
