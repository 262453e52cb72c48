// The story panel: the scenario's title, the step, the narration in the chosen language.
import { replace } from './dom.js';
import { narration, scenarioTitle } from '../model/scenarios.js';

const FREE = {
  en: 'Free play. Enqueue a job, press Claim, Renew, Complete or Release for any worker, and step the clock. Every answer comes from the real store, with its reason when it says no. Drag the time slider back and act to fork the timeline. Or pick a scenario and press Start.',
  ja: '自由に試せます。ジョブを enqueue し、各ワーカーの Claim・Renew・Complete・Release を押して、時計を進めてください。答えはすべて本物のストアから返り、拒否されたときは理由も表示されます。時間スライダーを戻して操作すると、タイムラインが分岐します。シナリオを選んで Start を押すこともできます。',
  zh: '自由模式。让任务入队，点击任意 worker 的 Claim、Renew、Complete 或 Release，并推进时钟。每个回答都来自真实的 store，被拒绝时会给出原因。把时间滑块拖回去再操作，时间线就会分叉。也可以选择一个场景并按 Start。',
};
const FREE_TITLE = { en: 'Free play', ja: '自由モード', zh: '自由模式' };

export function renderStory(nodes, scenario, step, lang) {
  nodes.narration.setAttribute('lang', lang);
  nodes.title.setAttribute('lang', lang);
  if (!scenario) {
    replace(nodes.title, FREE_TITLE[lang] ?? FREE_TITLE.en);
    replace(nodes.progress, '');
    replace(nodes.narration, FREE[lang] ?? FREE.en);
    nodes.panel.classList.remove('telling');
    return;
  }
  replace(nodes.title, scenarioTitle(scenario, lang));
  replace(nodes.progress, `step ${step + 1} of ${scenario.steps.length}`);
  replace(nodes.narration, narration(scenario, step, lang));
  nodes.panel.classList.add('telling');
}
