import { describe, expect, it } from 'vitest';
import { withinBudget } from '../../scripts/bench/ceiling.js';
import { optionsFrom, planFrom } from '../../scripts/bench/options.js';

// The ceiling part over every transport fits a time budget: rounds stop before one would end past it. The VERIFY=false
// pass (a quarter of a round over every transport) runs by default only for a study of named transports.

const planOf = (...args: string[]) => planFrom(optionsFrom(['ceiling', ...args], []));

describe('the ceiling plan', () => {
  it('has a 30-minute budget and up to 10 rounds by default, no pass unverified over every transport', () => {
    const plan = planOf();
    expect([plan.ceilingBudgetMs, plan.ceilingRounds, plan.ceilingUnverified]).toEqual([1_800_000, 10, false]);
    expect(plan.ceilingTransports.length).toBeGreaterThan(20);
  });

  it('runs exactly --rounds= without a budget, unless --minutes= sets one', () => {
    expect([planOf('--rounds=30').ceilingBudgetMs, planOf('--rounds=30').ceilingRounds]).toEqual([null, 30]);
    expect(planOf('--rounds=30', '--minutes=2.5').ceilingBudgetMs).toBe(150_000);
  });

  it('passes unverified by default when --transports= names the transports; either flag decides otherwise', () => {
    expect(planOf('--transports=tcp,zeromq').ceilingUnverified).toBe(true);
    expect(planOf('--transports=tcp', '--no-unverified').ceilingUnverified).toBe(false);
    expect(planOf('--unverified').ceilingUnverified).toBe(true);
  });
});

describe('withinBudget', () => {
  const plan = planOf('--minutes=30');
  it('lets a round start only when one as long as the longest so far ends within the budget', () => {
    // 25 min spent, the longest round 5 min: it ends at 30, within; a millisecond more spent, past.
    expect(withinBudget(plan, 1_500_000, 300_000)).toBe(true);
    expect(withinBudget(plan, 1_500_001, 300_000)).toBe(false);
    expect(withinBudget(planOf('--rounds=3'), 1e12, 1e12)).toBe(true);
  });
});
