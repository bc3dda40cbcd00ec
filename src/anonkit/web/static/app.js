// anonkit serve: progressive enhancement only; every page works without this file.
"use strict";

// A running job: poll its status, show the step, reload when it is done.
function poll(box) {
  const step = document.getElementById("step");
  const elapsed = document.getElementById("elapsed");
  const tick = async () => {
    try {
      const answer = await fetch(box.dataset.poll, {credentials: "same-origin"});
      const status = await answer.json();
      // the verdicts come first, the report when it is drawn: show each when it is there
      if (status.done || (status.verified && !box.dataset.verified)) {
        window.location.reload();
        return;
      }
      step.textContent = status.step;
      elapsed.textContent = `(${status.seconds.toFixed(1)} s)`;
    } catch (e) { /* the next tick tries again */ }
    setTimeout(tick, 150);
  };
  tick();
}

// The method form: show the chosen method's options only.
function methodOptions(form) {
  const show = () => {
    const chosen = form.querySelector("input[name=method]:checked");
    for (const fieldset of form.querySelectorAll("[data-options-of]")) {
      fieldset.hidden = !chosen || fieldset.dataset.optionsOf !== chosen.value;
    }
  };
  form.addEventListener("change", show);
  show();
}

document.addEventListener("DOMContentLoaded", () => {
  const box = document.querySelector("[data-poll]");
  if (box) poll(box);
  const form = document.getElementById("job-form");
  if (form) methodOptions(form);
});
