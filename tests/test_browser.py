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
    # SPEC §21: a proposal waits on people, and a person approves it from its card's panel.
    proposal = call(ana_key, "POST", "/tasks", {"title": "Move the runners to the new cluster", "approval": True})
    in_column(proposal["number"], "people")
    browser.find_element(By.ID, f"card-{proposal['number']}").click()
    wait.until(lambda d: d.find_elements(By.ID, "act-approve")).pop().click()
    in_column(proposal["number"], "ready")
    # …and answers the question an agent asks on it from the panel, choosing one of its options.
    call(ana_key, "POST", "/next", {"number": proposal["number"]})
    question = call(ana_key, "POST", f"/tasks/{proposal['number']}/questions",
                    {"body": "Blue or green rollout?", "to": "stewards", "options": ["blue", "green"]})
    in_column(proposal["number"], "people")
    browser.find_element(By.ID, f"card-{proposal['number']}").click()
    # The panel may redraw meanwhile (the task changed): each step is tried until it takes, and what
    # was typed stays through a redraw.
    wait.until(lambda d: settled(lambda: d.find_element(By.ID, f"answer-{question['id']}").send_keys("canary first")))
    wait.until(lambda d: click_option(d, "green"))
    in_column(proposal["number"], "claimed")
    answered = call(ana_key, "GET", f"/tasks/{proposal['number']}/questions")["results"][0]
    assert (answered["state"], answered["option"], answered["answer"]) == ("answered", "green", "canary first")
    assert browser.execute_script("return window.__marker") == "kept"
    browser.save_screenshot(str(SHOTS / "board.png"))


def settled(step) -> bool:
    """Run ``step``; False (to be tried again) when the element it used was redrawn under it."""
    from selenium.common.exceptions import (
        ElementNotInteractableException,
        NoSuchElementException,
        StaleElementReferenceException,
    )

    try:
        step()
    except (StaleElementReferenceException, ElementNotInteractableException, NoSuchElementException):
        return False
    return True


def click_option(browser, label: str) -> bool:
    """Click the open question's option ``label``; False (to be tried again) while the panel redraws."""
    from selenium.webdriver.common.by import By

    def click() -> None:
        [option] = [b for b in browser.find_elements(By.CSS_SELECTOR, ".answer-box button") if b.text == label]
        option.click()

    try:
        return settled(click)
    except ValueError:  # not drawn yet
        return False


def agent_team(api: str, keys: list[str], stop, failures: list[str]) -> None:
    """Two agents working through the API until ``stop``: one creates, claims and delivers
    tasks labelled ``agent``, the other confirms each attempt (the board's actions leave them be)."""
    import httpx

    maker, checker = (httpx.Client(base_url=api, headers={"Authorization": f"Bearer {key}"}, timeout=10)
                      for key in keys)
    round_ = 0
    while not stop.is_set():
        round_ += 1
        steps = [(maker, "/tasks", {"title": f"Agent chore number {round_}", "labels": ["agent"]}),
                 (maker, "/next", {"labels": ["agent"]})]
        for client, path, body in steps:
            response = client.post(path, json=body)
            if response.status_code >= 300:
                failures.append(f"{path}: {response.status_code} {response.text[:200]}")
                return
        number = response.json()["task"]["number"]
        post = maker.post("/posts", json={"body": f"chore {round_} done"}).json()
        for client, path in [(maker, f"/tasks/{number}/done"), (checker, f"/tasks/{number}/attempts/1/confirm")]:
            response = client.post(path, json={"post": post["id"]} if path.endswith("done") else None)
            if response.status_code >= 300:
                failures.append(f"{path}: {response.status_code} {response.text[:200]}")
                return
        stop.wait(0.5)


def test_a_steward_acts_from_the_board_while_an_agent_team_works(live_server, browser):
    """SPEC §14 as amended: from the board's task panel a steward changes a priority, assigns,
    supersedes a duplicate (a wrong survivor first: the refusal in words) and withdraws a task,
    each showing on the board and in the panel's history under their name within seconds, while
    two agents work through the API; the search finds a task by a word of its body, kept in the
    URL; a view-only user sees no control, and a request without the page's CSRF token is
    refused; no horizontal scroll at 390 x 844; screenshots in light, dark and on a phone."""
    import threading

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    space = load_agent_lab()
    planner, agents = seed_a_working_team(space)
    _, maker_key = member_with_key(space, "writer", "dee")
    _, checker_key = member_with_key(space, "writer", "eve")
    dup = create_task(space=space, actor=planner, title="A dashboard of what tokens cost", priority=2)
    vault = create_task(space=space, actor=planner, title="Keep secrets out of the repo",
                        body="Move them to the vault and scan every push.", priority=3)
    User.objects.create_superuser("ada", "ada@example.com", "correct horse")
    viewer = User.objects.create_user("vic", password="view only", is_staff=True)
    from django.contrib.auth.models import Permission
    viewer.user_permissions.add(Permission.objects.get(codename="view_task"))
    wait = WebDriverWait(browser, 10)
    stop, failures = threading.Event(), []
    team = threading.Thread(target=agent_team, args=(f"{live_server.url}/v1/spaces/agent-lab",
                                                     [maker_key, checker_key], stop, failures), daemon=True)

    def log_in(username: str, password: str) -> None:
        browser.delete_all_cookies()
        browser.get(f"{live_server.url}/admin/login/?next=/board/agent-lab/")
        browser.find_element(By.NAME, "username").send_keys(username)
        browser.find_element(By.NAME, "password").send_keys(password)
        browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
        wait.until(lambda d: d.find_elements(By.ID, "card-7"))

    def open_panel(number: int) -> None:
        browser.find_element(By.ID, f"card-{number}").click()
        wait.until(lambda d: d.find_element(By.ID, "panel-title").text.startswith(f"#{number} "))

    def history_says(text: str) -> None:
        said = "return (document.getElementById('panel-history') || {}).innerText || ''"  # redrawn as it changes
        wait.until(lambda d: text in d.execute_script(said), f"history lacks {text!r}")

    cards_shown = "return [...document.querySelectorAll('.card')].map(c => c.id)"
    log_in("ada", "correct horse")
    team.start()
    try:
        open_panel(7)  # "Write the onboarding guide", P3
        history_says("planner created the task")
        assert browser.find_element(By.ID, "fig-spend").text == "$0.00"  # nothing reported: dollars and cents
        Select(browser.find_element(By.ID, "act-priority")).select_by_value("0")  # chosen, not yet applied
        apply = browser.find_element(By.ID, "act-priority-apply")
        assert apply.is_displayed() and apply.text == "Set P0 (was P3)"
        assert "P3" in browser.find_element(By.CSS_SELECTOR, "#cards-ready #card-7").text
        apply.click()
        history_says("admin:ada changed the priority from P3 to P0")
        wait.until(lambda d: "P0" in d.find_element(By.CSS_SELECTOR, "#cards-ready #card-7").text)
        # the ready column is sorted by priority: #7 is now first
        wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "#cards-ready .card").get_attribute("id") == "card-7")

        open_panel(8)  # "Rotate the staging API keys", ready
        Select(browser.find_element(By.ID, "act-member")).select_by_visible_text("ana")
        browser.find_element(By.ID, "act-assign").click()
        wait.until(lambda d: "ana" in d.find_element(By.CSS_SELECTOR, "#cards-claimed #card-8").text)
        history_says("admin:ada assigned it to ana")

        open_panel(dup.number)
        browser.find_element(By.ID, "act-survivor").send_keys("999")
        browser.find_element(By.ID, "act-supersede").click()
        wait.until(lambda d: "No task 999" in d.find_element(By.ID, "panel-refusal").text)
        assert "No task 999" in browser.execute_script(  # in words, on the card too
            f"return document.getElementById('card-{dup.number}').innerText")
        survivor = browser.find_element(By.ID, "act-survivor")
        survivor.clear()
        survivor.send_keys("2")  # "Token spend dashboard"
        browser.find_element(By.ID, "act-supersede").click()
        history_says("admin:ada superseded it by #2")
        wait.until(lambda d: not d.find_elements(By.ID, f"card-{dup.number}"))

        open_panel(6)  # "Publish the evaluation report", blocked
        browser.find_element(By.ID, "act-withdraw").click()
        assert "Click again" in browser.find_element(By.ID, "act-withdraw").text  # a slip does not end it
        browser.find_element(By.ID, "act-withdraw").click()
        history_says("admin:ada withdrew it")
        wait.until(lambda d: not d.find_elements(By.ID, "card-6"))
        browser.find_element(By.ID, "panel-close").click()

        # A request from the page without its CSRF token changes nothing.
        status = browser.execute_async_script("""
            const done = arguments[arguments.length - 1];
            fetch('/board/agent-lab/tasks/7/withdraw', {method: 'POST', credentials: 'same-origin',
                  headers: {'Content-Type': 'application/json'}, body: '{}'}).then(r => done(r.status));""")
        assert status == 403 and Task.objects.get(space=space, number=7).status == "open"

        search = browser.find_element(By.ID, "filter-q")
        search.send_keys("vault\n")
        wait.until(lambda d: d.execute_script(cards_shown) == [f"card-{vault.number}"])
        assert "q=vault" in browser.current_url  # a view to share
        browser.get(browser.current_url)
        wait.until(lambda d: d.find_elements(By.ID, f"card-{vault.number}"))
        assert browser.find_element(By.ID, "filter-q").get_attribute("value") == "vault"
        wait.until(lambda d: d.execute_script(cards_shown) == [f"card-{vault.number}"])
    finally:
        stop.set()
        team.join(15)
    assert not failures, failures
    assert Task.objects.filter(space=space, labels__contains=["agent"], status="done").exists()

    # The keyboard: arrows move between cards, Enter opens the panel and focus goes into it,
    # Escape closes it and gives focus back to the card.
    from selenium.webdriver.common.keys import Keys

    focused = "return document.activeElement.id"
    browser.get(f"{live_server.url}/board/agent-lab/")
    wait.until(lambda d: d.find_elements(By.ID, "card-7"))
    browser.execute_script("document.getElementById('card-7').focus()")
    browser.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
    second = browser.execute_script(focused)
    assert second.startswith("card-") and second != "card-7"
    browser.switch_to.active_element.send_keys(Keys.ARROW_RIGHT)
    assert browser.execute_script("return document.activeElement.closest('#cards-blocked') !== null")
    browser.switch_to.active_element.send_keys(Keys.ARROW_LEFT, Keys.ARROW_UP)
    assert browser.execute_script(focused) == "card-7"
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    wait.until(lambda d: d.find_element(By.ID, "panel-title").text.startswith("#7 "))
    wait.until(lambda d: d.execute_script(focused) == "panel")
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)
    wait.until(lambda d: not d.find_element(By.ID, "panel").is_displayed())
    assert browser.execute_script(focused) == "card-7"

    # The week's work, spread over the last days as a team's would be, for the pictures.
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()
    for i, task in enumerate(Task.objects.filter(space=space, status="done").order_by("number")):
        Task.objects.filter(pk=task.pk).update(updated_at=now - timedelta(hours=(i * 7) % 150, minutes=i))
    browser.get(f"{live_server.url}/board/agent-lab/")
    wait.until(lambda d: d.find_elements(By.ID, "card-7"))
    wait.until(lambda d: d.find_element(By.ID, "throughput").find_elements(By.CSS_SELECTOR, "rect"))
    days = [s.text for s in browser.find_elements(By.CSS_SELECTOR, "#throughput-axis span")]
    assert 6 <= len(days) <= 8 and all(day for day in days), days  # a label at each midnight of the 7 days
    scale = [s.text for s in browser.find_elements(By.CSS_SELECTOR, "#throughput-scale span")]
    assert scale[-1] == "0" and scale[0].endswith("/h"), scale
    # The README's picture, docs/board.png, is this one copied by hand: no test writes a tracked file.
    browser.save_screenshot(str(SHOTS / "board-light.png"))
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme",
                                                                          "value": "dark"}]})
    background = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(18, 21, 28)", background
    open_panel(7)
    browser.save_screenshot(str(SHOTS / "board-dark.png"))
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True})
    try:
        browser.get(f"{live_server.url}/board/agent-lab/")
        wait.until(lambda d: d.find_elements(By.ID, "card-7"))
        wide = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
        # The emulated viewport is a phone's (Chromium may lay it out a few pixels wider than asked).
        assert wide[0] <= wide[1] < 420, f"the page scrolls sideways: {wide}"
        columns = browser.execute_script(
            "return [...document.querySelectorAll('.column')].map(c => Math.round(c.getBoundingClientRect().left))")
        assert len(set(columns)) == 1  # stacked, one under the other
        browser.save_screenshot(str(SHOTS / "board-phone.png"))
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    log_in("vic", "view only")  # view_task only: the panel shows, no control does
    open_panel(7)
    history_says("admin:ada changed the priority")
    assert browser.find_element(By.ID, "panel-actions").find_elements(By.CSS_SELECTOR, "*") == []
    assert not browser.find_elements(By.ID, "csrf")
    token = browser.get_cookie("csrftoken")["value"]
    status = browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        fetch('/board/agent-lab/tasks/7/withdraw', {method: 'POST', credentials: 'same-origin',
              headers: {'Content-Type': 'application/json', 'X-CSRFToken': arguments[0]}, body: '{}'})
          .then(r => done(r.status));""", token)
    assert status == 403 and Task.objects.get(space=space, number=7).status == "open"


def test_the_admins_task_list_reads_at_1400_pixels_without_scrolling_sideways(live_server, browser):
    """A steward's laptop: the task list, its filters beside it, fits 1,400 px; titles wrap."""
    from selenium.webdriver.common.by import By

    space = load_agent_lab()
    steward, _ = member_with_key(space, "steward")
    create_task(space=space, actor=steward, title="A long title " * 12, labels=["docs", "eval", "ops"])
    User.objects.create_superuser("ada", "ada@example.com", "correct horse")
    browser.set_window_size(1400, 900)
    browser.get(f"{live_server.url}/admin/login/?next=/admin/tasks/task/")
    browser.find_element(By.NAME, "username").send_keys("ada")
    browser.find_element(By.NAME, "password").send_keys("correct horse")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    browser.find_element(By.ID, "result_list")
    widths = browser.execute_script(
        "const r = document.querySelector('#changelist .results'); return [document.documentElement.scrollWidth,"
        " document.documentElement.clientWidth, r.scrollWidth, r.clientWidth,"
        " document.querySelector('#result_list td.field-title').getBoundingClientRect().width]")
    page, page_shown, results, results_shown, title = widths
    assert page <= page_shown and results <= results_shown, widths  # nothing hidden to the right
    assert title >= 170, widths  # a title reads as a line, not a word a line
    browser.save_screenshot(str(SHOTS / "admin-tasks-1400.png"))
