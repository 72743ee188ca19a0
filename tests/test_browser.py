"""A steward in a real browser: log in, preview a bind, supersede a leftover duplicate
through the action form, and see it leave the task list (headless Debian Chromium)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from tasks.models import Task
from tasks.services import create_task
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
    wait.until(lambda d: "Site administration" in d.title)

    browser.get(f"{live_server.url}/admin/spaces/space/{space.pk}/bind/")
    browser.find_element(By.NAME, "title").send_keys("Build a benchmark for code review agents")
    browser.find_element(By.CSS_SELECTOR, "#bind-preview input[type=submit]").click()
    wait.until(lambda d: d.find_elements(By.ID, "decision"))
    assert "T1" in browser.find_element(By.ID, "decision").text
    assert "4/9" in browser.find_element(By.ID, "scores").text
    browser.save_screenshot(str(SHOTS / "bind-preview.png"))

    browser.get(f"{live_server.url}/admin/tasks/task/")
    browser.find_element(By.CSS_SELECTOR, f"input[name=_selected_action][value='{dup.pk}']").click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("supersede")
    browser.find_element(By.CSS_SELECTOR, "button[name=index]").click()
    wait.until(lambda d: d.find_elements(By.ID, "supersede-form"))
    browser.find_element(By.NAME, "surviving_task").send_keys(str(keep.number))
    browser.save_screenshot(str(SHOTS / "supersede-form.png"))
    browser.find_element(By.CSS_SELECTOR, "#supersede-form input[name=apply]").click()
    wait.until(lambda d: "Superseded 1 task" in d.page_source)
    browser.save_screenshot(str(SHOTS / "task-list-after.png"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
    assert len(rows) == 1 and "Retry policy" in rows[0].text
    assert Task.objects.get(pk=dup.pk).status == "superseded"
