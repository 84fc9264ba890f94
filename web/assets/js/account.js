// The account page (`#/account`, token mode): who is signed in; their keys (made with the
// scopes they choose, the secret shown once with a copy button, revoked); this month's usage and
// the budgets their requests are checked against; and for admins, the people, with their roles,
// budgets, and whether they are disabled. Every value shown comes from the API as text.

import * as api from './api.js';
import { clear, copyText, formatTime, h, toast } from './dom.js';

const SCOPES = ['chat', 'openai', 'mcp', 'admin'];

/** A budget as words: "100000 tokens a month", "$5 a day", or "none". */
export function budgetText(budget) {
  if (!budget) return 'none';
  const amount = budget.usd !== undefined && budget.usd !== null ? `$${budget.usd}` : `${budget.tokens} tokens`;
  return `${amount} a ${budget.period}`;
}

export function mountAccount(container, app, session) {
  app.setTitle('Account');
  const user = session.user ?? { name: 'admin', role: 'admin', id: 'admin' };
  const isAdmin = user.role === 'admin';
  const keys = h('ul.account-list', { id: 'keys', 'aria-label': 'Your keys' });
  const secret = h('div.key-secret', { id: 'new-key-secret', hidden: true });
  const usage = h('dl.account-usage', { id: 'usage' });
  const people = h('ul.account-list', { id: 'people', 'aria-label': 'People' });
  const name = h('input', { id: 'key-name', name: 'name', required: true, maxlength: 200, autocomplete: 'off' });
  const boxes = SCOPES.filter((s) => s !== 'admin' || isAdmin).map((scope) =>
    h('label.scope', {}, h('input', { type: 'checkbox', name: 'scope', value: scope, checked: scope !== 'admin' }), ` ${scope}`),
  );
  const form = h(
    'form.new-key',
    { id: 'new-key', onsubmit: (e) => makeKey(e) },
    h('label', { for: 'key-name' }, 'Name'),
    name,
    h('fieldset', {}, h('legend', {}, 'Scopes'), boxes),
    h('button.primary', { type: 'submit' }, 'Make a key'),
  );
  const page = h(
    'section.account-page',
    {},
    h('p', { id: 'account-who' }, `Signed in as ${user.name} (${user.role})`),
    h('h2', {}, 'Keys'),
    h('p', {}, 'A key lets an SDK, an agent or an IDE act as you, within its scopes: chat (the /v1 API), openai (/openai/v1), mcp (/mcp), admin (people).'),
    form,
    secret,
    keys,
    h('h2', {}, 'This month'),
    usage,
    isAdmin ? [h('h2', {}, 'People'), people] : null,
  );
  clear(container, page);
  let gone = false;

  async function makeKey(e) {
    e.preventDefault();
    const scopes = boxes.map((b) => b.querySelector('input')).filter((i) => i.checked).map((i) => i.value);
    try {
      const made = await api.post('v1/keys', { name: name.value.trim(), scopes });
      const copy = h('button', { type: 'button', id: 'copy-key', onclick: () => copyText(made.key, 'Key') }, 'Copy');
      clear(secret, h('p', {}, `${made.name}: shown this once. Copy it now.`), h('code', { id: 'key-value' }, made.key), ' ', copy);
      secret.hidden = false;
      name.value = '';
      loadKeys();
    } catch (err) {
      toast(err.message, 'error');
    }
  }

  async function loadKeys() {
    try {
      const answer = await api.get('v1/keys');
      if (gone) return;
      clear(
        keys,
        answer.keys.length
          ? answer.keys.map((key) =>
              h(
                'li.account-row.key',
                { dataset: { id: key.id, name: key.name } },
                h('strong', {}, key.name),
                ` ${key.scopes.join(', ')} · made ${formatTime(key.createdAt)}`,
                key.expiresAt ? ` · ends ${formatTime(key.expiresAt)}` : '',
                key.budget ? ` · budget ${budgetText(key.budget)}` : '',
                ' ',
                h('button', { type: 'button', dataset: { action: 'revoke' }, onclick: () => revoke(key) }, 'Revoke'),
              ),
            )
          : h('li.empty', {}, 'No keys yet.'),
      );
      keys.dataset.loaded = 'true';
    } catch (err) {
      if (!gone) toast(`Your keys could not be listed: ${err.message}`, 'error');
    }
  }

  async function revoke(key) {
    try {
      await api.del(`v1/keys/${encodeURIComponent(key.id)}`);
      toast(`${key.name}: revoked`);
      loadKeys();
    } catch (err) {
      toast(err.message, 'error');
    }
  }

  async function loadUsage() {
    try {
      const answer = await api.get('v1/usage');
      if (gone) return;
      const t = answer.total;
      const row = (term, value, id) => [h('dt', {}, term), h('dd', { dataset: { field: id } }, String(value))];
      clear(
        usage,
        row('Model calls', t.calls, 'calls'),
        row('Tokens', `${t.totalTokens} (${t.inputTokens} in, ${t.outputTokens} out)`, 'tokens'),
        row('Cost', `$${t.costUsd}${t.unpricedCalls ? ` (${t.unpricedCalls} calls without a price)` : ''}`, 'cost'),
        row('Your budget', budgetText(answer.budgets.user), 'budget'),
      );
      usage.dataset.loaded = 'true';
    } catch (err) {
      if (!gone) toast(`Your usage could not be read: ${err.message}`, 'error');
    }
  }

  function personRow(person) {
    const amount = h('input', { type: 'number', min: 0, step: 'any', 'aria-label': `${person.name}'s budget`, value: person.budget ? (person.budget.usd ?? person.budget.tokens) : '' });
    const unit = h('select', { 'aria-label': 'unit' }, ['tokens', 'usd'].map((u) => h('option', { value: u, selected: person.budget && person.budget[u] !== undefined && person.budget[u] !== null }, u)));
    const period = h('select', { 'aria-label': 'period' }, ['day', 'week', 'month'].map((p) => h('option', { value: p, selected: (person.budget?.period ?? 'month') === p }, p)));
    const save = h('button', { type: 'button', dataset: { action: 'budget' } }, 'Set budget');
    save.addEventListener('click', () => {
      const budget = amount.value === '' ? null : { [unit.value]: Number(amount.value), period: period.value };
      change(person, { budget }, `${person.name}: budget ${budgetText(budget)}`);
    });
    const builtin = person.id === 'admin';
    const toggle = h('button', { type: 'button', dataset: { action: person.disabled ? 'enable' : 'disable' } }, person.disabled ? 'Enable' : 'Disable');
    toggle.addEventListener('click', () => change(person, { disabled: !person.disabled }, `${person.name}: ${person.disabled ? 'enabled' : 'disabled'}`));
    return h(
      'li.account-row.person',
      { dataset: { name: person.name, disabled: String(person.disabled) } },
      h('strong', {}, person.name),
      ` ${person.role}${person.disabled ? ' · disabled' : ''} · budget ${budgetText(person.budget)} `,
      builtin ? null : h('span.person-controls', {}, amount, unit, period, save, toggle),
    );
  }

  async function change(person, body, done) {
    try {
      await api.patch(`v1/users/${encodeURIComponent(person.id)}`, body);
      toast(done);
      loadPeople();
    } catch (err) {
      toast(err.message, 'error');
    }
  }

  async function loadPeople() {
    try {
      const answer = await api.get('v1/users');
      if (gone) return;
      clear(people, answer.users.map(personRow));
      people.dataset.loaded = 'true';
    } catch (err) {
      if (!gone) toast(`The people could not be listed: ${err.message}`, 'error');
    }
  }

  loadKeys();
  loadUsage();
  if (isAdmin) loadPeople();
  return {
    unmount() {
      gone = true;
    },
  };
}
