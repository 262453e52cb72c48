// The story panel: the scenario's title, the step, its source (presets from real incidents) and
// the narration, all in the chosen language.
import { replace, rich } from '../../common/dom.js';
import { narration, pointsAtTables, scenarioSource, scenarioTitle } from '../model/scenarios.js';
import { languageTag, t } from '../../common/i18n.js';

export function renderStory(nodes, scenario, step, lang) {
  nodes.narration.setAttribute('lang', languageTag(lang));
  nodes.title.setAttribute('lang', languageTag(lang));
  if (!scenario) {
    replace(nodes.title, t(lang, 'story.free.title'));
    replace(nodes.progress, '');
    delete nodes.progress.dataset.step;
    replace(nodes.narration, rich(t(lang, 'story.free')));
    nodes.source.hidden = true;
    nodes.links.hidden = true;
    nodes.panel.classList.remove('telling');
    return;
  }
  replace(nodes.title, scenarioTitle(scenario, lang));
  replace(nodes.progress, t(lang, 'story.step', step + 1, scenario.steps.length));
  nodes.progress.dataset.step = String(step + 1); // the same in every language (tests, screenshots)
  replace(nodes.narration, rich(narration(scenario, step, lang)));
  const source = scenarioSource(scenario, lang);
  nodes.source.hidden = !source;
  replace(nodes.source, source ? rich(source) : '');
  nodes.links.hidden = !pointsAtTables(scenario, step);
  nodes.panel.classList.add('telling');
}
