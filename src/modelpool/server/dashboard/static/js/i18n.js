// Every UI string, in English and 简体中文. The choice is remembered in localStorage; the first visit
// follows the browser's language.

const EN = {
  "nav.overview": "Overview", "nav.models": "Models", "nav.ranking": "Ranking", "nav.settings": "Settings",
  "nav.sessions": "Sessions", "nav.events": "Events", "nav.questions": "Questions", "nav.usage": "Usage",
  "us.title": "Usage and cost", "us.total": "{calls} calls · {cost} in total", "us.perDay": "Spend per day (UTC)",
  "us.perRoute": "Spend per route", "us.none": "No calls recorded yet.", "us.groupBy": "Group by",
  "us.by.pool": "Pool", "us.by.route": "Route", "us.by.key": "Client key", "us.by.day": "Day",
  "us.calls": "Calls", "us.in": "Tokens in", "us.cached": "Cached", "us.out": "Tokens out", "us.cost": "Cost (USD)",
  "us.estimated": "estimated from the text for {n} call(s): the upstream reported no usage",
  "logout": "Log out", "live.live": "live", "live.connecting": "connecting…", "live.offline": "offline",
  "login.token": "Admin token", "login.submit": "Log in", "login.failed": "That token was not accepted.",
  "login.hint": "The token is server.admin_token, or the admin_token file in the state directory.",
  "loading": "Loading…", "error": "Error", "saved": "Saved", "none": "none", "yes": "yes", "no": "no",
  "layer.default": "default", "layer.file": "file", "layer.dashboard": "dashboard",
  // overview
  "ov.pools": "Pools", "ov.pool": "Pool", "ov.routes": "Routes", "ov.nRoutes": "{n} routes", "ov.nRoutes1": "1 route", "ov.efforts": "Efforts",
  "ov.images": "Images", "ov.context": "Context", "ov.route": "Route", "ov.state": "State", "ov.ttft": "TTFT",
  "ov.tps": "tok/s", "ov.success": "Success", "ov.lastError": "Last error", "ov.strategy": "Strategy",
  "ov.imagesVia": "images via", "ov.noImages": "no route reads images", "ov.configError": "Config change rejected",
  "ov.warnings": "Warnings", "ov.noPools": "No pools: no provider serves a chat model yet.",
  "badge.ok": "ok", "badge.degraded": "degraded", "badge.unavailable": "unavailable", "badge.unknown": "unknown",
  "badge.off": "off",
  // period + holidays
  "period.title": "Peak / idle", "period.peak": "peak", "period.idle": "idle", "period.now": "Now",
  "period.local": "Local time", "period.windows": "Windows", "period.next": "Next flip", "period.why": "Why",
  "period.off": "The peak overlay is off", "period.ranking": "Ranking in force",
  "hol.title": "Statutory holidays", "hol.status": "Status", "hol.year": "Year", "hol.holidays": "Holidays",
  "hol.makeup": "Make-up workdays", "hol.updated": "Last update", "hol.source": "Source", "hol.notices": "Notices",
  "hol.auto": "Keep it updated automatically", "hol.sync": "Sync now", "hol.notPublished": "Not published yet",
  "hol.error": "Last error",
  "hol.st.synced": "synced", "hol.st.stale": "stale", "hol.st.not synced": "not synced", "hol.st.failed": "failed",
  "hol.st.bundled": "bundled snapshot", "hol.st.off": "off",
  // roster
  "ro.title": "Models", "ro.expandAll": "Expand all", "ro.collapseAll": "Collapse all",
  "ro.section.chat": "Chat channels", "ro.section.vision": "Vision twins (vision-router wrappers)",
  "ro.tally": "{models} models · ok {ok} · cooling {resting} · off {off}",
  "ro.tally1": "1 model · ok {ok} · cooling {resting} · off {off}",
  "ro.closeChannel": "Close channel", "ro.openChannel": "Open channel", "ro.switchOff": "Switch off",
  "ro.switchOn": "Switch on", "ro.wraps": "wraps {source}", "ro.closedTag": "closed",
  "ro.noRows": "This channel serves no models.",
  "st.ok": "ok", "st.untested": "untested", "st.cooling": "cooling", "st.quota": "quota exhausted",
  "st.failing": "failing", "st.off": "off",
  "why.manual": "switched off here", "why.vision": "vision twin: never a candidate unless switched on",
  "why.provider": "provider not in pool.include", "why.excluded": "excluded in the config file",
  "why.non-chat": "not a chat model",
  "ro.detail.ttft": "TTFT {ttft} · {ok}/{n}", "ro.detail.never": "never tried",
  "ro.detail.rest": "back in {left} · {kind}", "ro.detail.failed": "last attempt failed · {kind} · {ok}/{n}",
  "ro.lists": "Switch lists in force",
  // ranking
  "rk.title": "Aggregator ranking", "rk.model": "Model", "rk.none": "No aggregator (Vercel / OpenRouter) route is configured.",
  "rk.provider": "Provider", "rk.tps": "tok/s", "rk.ttft": "TTFT", "rk.uptime": "Uptime 15m", "rk.notes": "Notes",
  "rk.firstParty": "first-party", "rk.servedBy": "Served by", "rk.session": "session",
  "rk.noServed": "No reply through this aggregator yet.", "rk.stats": "stats age {age}",
  "rk.unavailable": "Stats unavailable: {error}", "rk.refresh": "Refresh stats", "rk.updated": "updated {time}",
  // settings
  "se.behaviour": "Behaviour", "se.reset": "Reset", "se.resetHint": "Remove the dashboard value (the file or default applies)",
  "se.layer": "layer", "se.priority": "Provider priority", "se.priorityHint":
    "Highest first. Unlisted providers follow in registration order; saving the registration order stores an empty ranking.",
  "se.save": "Save", "se.inherit": "Use inherited", "se.up": "Move up", "se.down": "Move down",
  "se.gone": "gone", "se.goneHint": "This provider is no longer registered; it stays listed until you remove it.",
  "se.remove": "Remove", "se.inherits": "empty: inherits", "se.peakList": "Ranking while peak",
  "se.offPeakList": "Ranking while idle", "se.peakCard": "Peak / idle (峰谷时段)",
  "se.groups": "Merged groups", "se.groupsHint": "Selectors: model id, provider/model route key, or a glob (* and ?). The earlier group wins a contested route.",
  "se.gid": "Id", "se.gname": "Name", "se.gmodels": "Selectors (comma separated)", "se.gmerge": "merge",
  "se.addGroup": "Add group", "se.saveGroups": "Save groups", "se.twin": "twin", "se.models": "{n} models", "se.models1": "1 model", "se.inForce": "in force now",
  "se.weekdays": "Peak weekdays", "se.windowsHint": "HH:MM-HH:MM, comma separated",
  // knobs
  "k.pool.strategy": "Strategy", "k.pool.sticky": "Sticky sessions", "k.pool.fallback": "Fail over",
  "k.pool.model_fallback": "Fall back to other models", "k.pool.max_attempts": "Routes one call may try",
  "k.pool.retries_per_route": "Retries per route", "k.pool.retry_backoff": "Retry backoff (s)",
  "k.pool.cooldown": "Cooldown base (s)", "k.pool.max_cooldown": "Cooldown cap (s)",
  "k.pool.quota_cooldown": "Quota rest floor (s)", "k.pool.quota_reset_hour": "Quota reset hour",
  "k.pool.prefer_same_model": "Same model on another provider first", "k.pool.confirm_switch": "Ask before switching",
  "k.pool.confirm_timeout": "Question waits (s)", "k.pool.notice": "Switch notice",
  "k.gateway_ranking.enabled": "Aggregator ranking", "k.gateway_ranking.min_uptime": "Minimum uptime (%)",
  "k.gateway_ranking.stats_ttl": "Stats lifetime (s)", "k.peak.enabled": "Peak ranking on",
  "k.peak.time_zone": "Time zone", "k.peak.windows": "Peak windows", "k.peak.weekdays": "Peak weekdays", "k.holidays.sync": "Sync the holiday calendar",
  // sessions
  "ss.title": "Sessions", "ss.session": "Session", "ss.pool": "Pool", "ss.provider": "Provider",
  "ss.model": "Provider's model id", "ss.effort": "Effort", "ss.attempts": "Attempts", "ss.from": "Switched from",
  "ss.at": "When", "ss.none": "No session has been served yet.",
  "ss.route": "Route", "ss.calls": "Calls", "ss.cost": "Cost", "ss.tokens": "Tokens in / out", "ss.last": "Last call",
  "ss.back": "All sessions", "ss.callsTitle": "Calls", "ss.summary": "{calls} calls ({failed} failed) · {tin} tokens in · {tout} out · {cost}",
  "ss.kept": "The last {n} calls of a session are kept.", "ss.noCalls": "No calls recorded for this session.",
  "ss.unknown": "Unknown session.", "ss.liveRoute": "Live route", "ss.attemptsCol": "Attempts", "ss.switches": "Switches",
  "ss.hedged": "Hedged", "ss.ttft": "TTFT", "ss.latency": "Latency", "ss.outcome": "Outcome", "ss.time": "Time",
  "ss.in": "In", "ss.out": "Out",
  // events
  "ev.title": "Events", "ev.none": "Waiting for events…", "ev.switch": "switch", "ev.hedge": "hedge", "ev.failure": "failure",
  "ev.question": "question", "ev.question-closed": "answered", "ev.pin": "pin", "ev.served": "served",
  "ev.rest": "rest {rest}",
  // questions
  "qu.title": "Questions", "qu.none": "No question is waiting.", "qu.switch": "Switch",
  "qu.keep": "Keep current model", "qu.left": "switches by itself in {s} s", "qu.kind": "failure",
  "qu.outcome.switch": "switching", "qu.outcome.keep": "kept", "qu.outcome.timeout": "timed out: switched", "qu.outcome.unattended": "no watcher: switched",
  "qu.banner": "A route failed and the gateway asks before switching.", "qu.open": "Answer",
};

const ZH = {
  "nav.overview": "概览", "nav.models": "模型列表", "nav.ranking": "排名", "nav.settings": "设置",
  "nav.sessions": "会话", "nav.events": "事件", "nav.questions": "询问", "nav.usage": "用量",
  "us.title": "用量与费用", "us.total": "共 {calls} 次调用 · 合计 {cost}", "us.perDay": "每日花费（UTC）",
  "us.perRoute": "各路由花费", "us.none": "还没有调用记录。", "us.groupBy": "分组",
  "us.by.pool": "模型池", "us.by.route": "路由", "us.by.key": "客户端密钥", "us.by.day": "日期",
  "us.calls": "调用次数", "us.in": "输入 token", "us.cached": "缓存命中", "us.out": "输出 token", "us.cost": "费用（美元）",
  "us.estimated": "{n} 次调用按文本估算（上游未报告用量）",
  "logout": "退出登录", "live.live": "实时", "live.connecting": "连接中…", "live.offline": "离线",
  "login.token": "管理令牌", "login.submit": "登录", "login.failed": "令牌不正确。",
  "login.hint": "令牌即 server.admin_token，或状态目录中的 admin_token 文件。",
  "loading": "加载中…", "error": "错误", "saved": "已保存", "none": "无", "yes": "是", "no": "否",
  "layer.default": "默认", "layer.file": "配置文件", "layer.dashboard": "控制台",
  "ov.pools": "模型池", "ov.pool": "模型池", "ov.routes": "路由", "ov.nRoutes": "{n} 条路由", "ov.nRoutes1": "1 条路由", "ov.efforts": "思考深度",
  "ov.images": "识图", "ov.context": "上下文", "ov.route": "路由", "ov.state": "状态", "ov.ttft": "首字延迟",
  "ov.tps": "tok/s", "ov.success": "成功", "ov.lastError": "最近错误", "ov.strategy": "策略",
  "ov.imagesVia": "可识图路由", "ov.noImages": "没有可识图的路由", "ov.configError": "配置修改被拒绝",
  "ov.warnings": "警告", "ov.noPools": "暂无模型池：还没有提供商提供对话模型。",
  "badge.ok": "正常", "badge.degraded": "降级", "badge.unavailable": "不可用", "badge.unknown": "未知",
  "badge.off": "关闭",
  "period.title": "峰谷时段", "period.peak": "高峰", "period.idle": "空闲", "period.now": "当前",
  "period.local": "当地时间", "period.windows": "高峰窗口", "period.next": "下次切换", "period.why": "原因",
  "period.off": "峰谷排序已关闭", "period.ranking": "当前生效的排序",
  "hol.title": "法定节假日", "hol.status": "状态", "hol.year": "年份", "hol.holidays": "节假日",
  "hol.makeup": "调休上班日", "hol.updated": "最近更新", "hol.source": "来源", "hol.notices": "通知",
  "hol.auto": "自动保持更新", "hol.sync": "立即同步", "hol.notPublished": "尚未发布", "hol.error": "最近错误",
  "hol.st.synced": "已同步", "hol.st.stale": "已过期", "hol.st.not synced": "未同步", "hol.st.failed": "同步失败",
  "hol.st.bundled": "内置快照", "hol.st.off": "已关闭",
  "ro.title": "模型列表", "ro.expandAll": "全部展开", "ro.collapseAll": "全部收起",
  "ro.section.chat": "对话渠道", "ro.section.vision": "识图模式（vision-router 创建）",
  "ro.tally": "{models} 个 · 可用 {ok} · 冷却 {resting} · 关闭 {off}",
  "ro.tally1": "1 个 · 可用 {ok} · 冷却 {resting} · 关闭 {off}",
  "ro.closeChannel": "关闭本渠道", "ro.openChannel": "启用本渠道", "ro.switchOff": "关闭",
  "ro.switchOn": "启用", "ro.wraps": "包装 {source}", "ro.closedTag": "已关闭",
  "ro.noRows": "该渠道没有模型。",
  "st.ok": "可用", "st.untested": "未测", "st.cooling": "冷却中", "st.quota": "额度耗尽",
  "st.failing": "异常", "st.off": "已关闭",
  "why.manual": "已在此关闭", "why.vision": "识图孪生：除非手动启用，否则不参与候选",
  "why.provider": "提供商不在 pool.include 中", "why.excluded": "配置文件中已排除",
  "why.non-chat": "不是对话模型",
  "ro.detail.ttft": "首字 {ttft} · {ok}/{n}", "ro.detail.never": "从未调用",
  "ro.detail.rest": "{left} 后恢复 · {kind}", "ro.detail.failed": "最近一次失败 · {kind} · {ok}/{n}",
  "ro.lists": "生效中的开关列表",
  "rk.title": "聚合网关排名", "rk.model": "模型", "rk.none": "没有配置聚合网关（Vercel / OpenRouter）路由。",
  "rk.provider": "提供商", "rk.tps": "tok/s", "rk.ttft": "首字延迟", "rk.uptime": "15 分钟可用率", "rk.notes": "备注",
  "rk.firstParty": "官方", "rk.servedBy": "实际服务", "rk.session": "会话",
  "rk.noServed": "还没有经过该聚合网关的回复。", "rk.stats": "统计数据 {age} 前",
  "rk.unavailable": "统计数据不可用：{error}", "rk.refresh": "刷新统计", "rk.updated": "更新于 {time}",
  "se.behaviour": "行为", "se.reset": "重置", "se.resetHint": "移除控制台的值（改用配置文件或默认值）",
  "se.layer": "来源", "se.priority": "提供商优先级", "se.priorityHint":
    "从高到低。未列出的提供商按注册顺序排在后面；保存注册顺序即保存空排序。",
  "se.save": "保存", "se.inherit": "使用继承", "se.up": "上移", "se.down": "下移",
  "se.gone": "已消失", "se.goneHint": "该提供商已不再注册；在你移除之前它会一直保留在列表中。",
  "se.remove": "移除", "se.inherits": "空：继承", "se.peakList": "高峰时段排序",
  "se.offPeakList": "空闲时段排序", "se.peakCard": "峰谷时段（peak / idle）",
  "se.groups": "合并分组", "se.groupsHint": "选择器：模型 id、provider/model 路由键或通配符（* 与 ?）。先出现的分组优先认领路由。",
  "se.gid": "Id", "se.gname": "名称", "se.gmodels": "选择器（逗号分隔）", "se.gmerge": "合并",
  "se.addGroup": "添加分组", "se.saveGroups": "保存分组", "se.twin": "孪生", "se.models": "{n} 个模型", "se.models1": "1 个模型", "se.inForce": "当前生效",
  "se.weekdays": "高峰工作日", "se.windowsHint": "HH:MM-HH:MM，逗号分隔",
  "k.pool.strategy": "策略", "k.pool.sticky": "会话粘滞", "k.pool.fallback": "故障切换",
  "k.pool.model_fallback": "回退到其他模型", "k.pool.max_attempts": "单次调用最多尝试的路由",
  "k.pool.retries_per_route": "每条路由重试次数", "k.pool.retry_backoff": "重试间隔（秒）",
  "k.pool.cooldown": "冷却基数（秒）", "k.pool.max_cooldown": "冷却上限（秒）",
  "k.pool.quota_cooldown": "额度耗尽最短休息（秒）", "k.pool.quota_reset_hour": "额度恢复时刻",
  "k.pool.prefer_same_model": "优先其他渠道的同一模型", "k.pool.confirm_switch": "切换前询问",
  "k.pool.confirm_timeout": "询问等待（秒）", "k.pool.notice": "切换提示",
  "k.gateway_ranking.enabled": "聚合网关排名", "k.gateway_ranking.min_uptime": "最低可用率（%）",
  "k.gateway_ranking.stats_ttl": "统计有效期（秒）", "k.peak.enabled": "启用峰谷排序",
  "k.peak.time_zone": "时区", "k.peak.windows": "高峰窗口", "k.peak.weekdays": "高峰工作日", "k.holidays.sync": "同步节假日日历",
  "ss.title": "会话", "ss.session": "会话", "ss.pool": "模型池", "ss.provider": "提供商",
  "ss.model": "提供商模型 id", "ss.effort": "思考深度", "ss.attempts": "尝试次数", "ss.from": "切换自",
  "ss.at": "时间", "ss.none": "还没有会话。",
  "ss.route": "线路", "ss.calls": "调用", "ss.cost": "费用", "ss.tokens": "输入 / 输出 token", "ss.last": "最近调用",
  "ss.back": "全部会话", "ss.callsTitle": "调用", "ss.summary": "{calls} 次调用（{failed} 次失败）· 输入 {tin} token · 输出 {tout} · {cost}",
  "ss.kept": "每个会话保留最近 {n} 次调用。", "ss.noCalls": "这个会话还没有调用记录。",
  "ss.unknown": "未知会话。", "ss.liveRoute": "当前线路", "ss.attemptsCol": "尝试", "ss.switches": "切换",
  "ss.hedged": "对冲", "ss.ttft": "首 token", "ss.latency": "耗时", "ss.outcome": "结果", "ss.time": "时间",
  "ss.in": "输入", "ss.out": "输出",
  "ev.title": "事件", "ev.none": "等待事件…", "ev.switch": "切换", "ev.hedge": "对冲", "ev.failure": "失败",
  "ev.question": "询问", "ev.question-closed": "已答复", "ev.pin": "固定", "ev.served": "完成",
  "ev.rest": "休息 {rest}",
  "qu.title": "询问", "qu.none": "没有待答复的询问。", "qu.switch": "切换",
  "qu.keep": "保持当前模型", "qu.left": "{s} 秒后自动切换", "qu.kind": "失败类型",
  "qu.outcome.switch": "正在切换", "qu.outcome.keep": "已保持", "qu.outcome.timeout": "超时：已切换", "qu.outcome.unattended": "无人值守：已切换",
  "qu.banner": "有路由失败，网关在切换前征求你的意见。", "qu.open": "去答复",
};

export const TABLES = { en: EN, zh: ZH };
const KEY = "modelpool.lang";
let lang = pick();
const listeners = new Set();

function pick() {
  let stored = null;
  try {
    stored = localStorage.getItem(KEY);
  } catch {
    stored = null;
  }
  if (stored && TABLES[stored]) return stored;
  return (navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
}

export function getLang() {
  return lang;
}

export function setLang(next) {
  if (!TABLES[next] || next === lang) return;
  lang = next;
  try {
    localStorage.setItem(KEY, next);
  } catch {
    // private mode: the choice lasts for this page only
  }
  applyStatic();
  for (const fn of listeners) fn(lang);
}

export function onLang(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export function t(key, vars = {}) {
  const text = TABLES[lang][key] ?? EN[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => (name in vars ? String(vars[name]) : `{${name}}`));
}

// Elements written in the HTML carry data-i18n; everything rendered by the pages calls t() directly.
export function applyStatic(root = document) {
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  for (const el of root.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const select of root.querySelectorAll("select#lang")) select.value = lang;
}

export function bindSwitcher(select) {
  select.value = lang;
  select.addEventListener("change", () => setLang(select.value));
}
