/** `Ui` over the real VS Code window API. */

import * as vscode from 'vscode';
import type { CancellationTokenLike, InputOptions, PickItem, PickOptions, ProgressReporter, Ui } from './ui';

type ValueItem<T> = vscode.QuickPickItem & { value: T };

function toItems<T>(items: PickItem<T>[]): ValueItem<T>[] {
  return items.map((i) => ({ label: i.label, description: i.description, detail: i.detail, picked: i.picked, value: i.value }));
}

export class VscodeUi implements Ui {
  async pick<T>(items: PickItem<T>[], options: PickOptions): Promise<T | undefined> {
    const chosen = await vscode.window.showQuickPick(toItems(items), {
      title: options.title,
      placeHolder: options.placeholder,
      matchOnDescription: true,
      matchOnDetail: true,
      ignoreFocusOut: true,
    });
    return chosen?.value;
  }

  async pickMany<T>(items: PickItem<T>[], options: PickOptions): Promise<T[] | undefined> {
    const chosen = await vscode.window.showQuickPick(toItems(items), {
      title: options.title,
      placeHolder: options.placeholder,
      canPickMany: true,
      matchOnDescription: true,
      ignoreFocusOut: true,
    });
    return chosen?.map((c) => c.value);
  }

  input(options: InputOptions): Promise<string | undefined> {
    return Promise.resolve(
      vscode.window.showInputBox({
        title: options.title,
        prompt: options.prompt,
        placeHolder: options.placeholder,
        value: options.value,
        ignoreFocusOut: true,
        validateInput: options.validate ? async (v) => (await options.validate?.(v)) ?? null : undefined,
      }),
    );
  }

  info(message: string, ...actions: string[]): Promise<string | undefined> {
    return Promise.resolve(vscode.window.showInformationMessage(message, ...actions));
  }

  warn(message: string, ...actions: string[]): Promise<string | undefined> {
    return Promise.resolve(vscode.window.showWarningMessage(message, ...actions));
  }

  error(message: string, ...actions: string[]): Promise<string | undefined> {
    return Promise.resolve(vscode.window.showErrorMessage(message, ...actions));
  }

  withProgress<R>(title: string, task: (report: ProgressReporter, token: CancellationTokenLike) => Promise<R>): Promise<R> {
    return Promise.resolve(
      vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, (progress, token) => {
        let done = 0;
        const report: ProgressReporter = (message, percentage) => {
          let increment: number | undefined;
          if (percentage !== undefined && percentage > done) {
            increment = percentage - done;
            done = percentage;
          }
          progress.report({ message, increment });
        };
        return task(report, token);
      }),
    );
  }

  /** The folder the running command acts on (multi-root), else the first. */
  folder: () => vscode.Uri | undefined = () => vscode.workspace.workspaceFolders?.[0]?.uri;

  private defaultFolder(): vscode.Uri | undefined {
    return this.folder();
  }

  async saveFile(title: string, defaultName: string): Promise<string | undefined> {
    const folder = this.defaultFolder();
    const uri = await vscode.window.showSaveDialog({
      title,
      defaultUri: folder ? vscode.Uri.joinPath(folder, defaultName) : undefined,
      filters: { 'Prepared handoff (JSON)': ['json'] },
    });
    return uri?.fsPath;
  }

  async openFile(title: string, filters?: Record<string, string[]>): Promise<string | undefined> {
    const uris = await vscode.window.showOpenDialog({
      title,
      defaultUri: this.defaultFolder(),
      canSelectMany: false,
      filters: filters ?? { 'Prepared handoff (JSON)': ['json'] },
    });
    return uris?.[0]?.fsPath;
  }

  runCommand(id: string, ...args: unknown[]): Promise<unknown> {
    return Promise.resolve(vscode.commands.executeCommand(id, ...args));
  }

  async runInTerminal(name: string, commandLine: string): Promise<void> {
    // Always a new terminal: one with this name may be running an agent already, and
    // the command line would be typed into it.
    const terminal = vscode.window.createTerminal({ name, cwd: this.defaultFolder() });
    terminal.show();
    terminal.sendText(commandLine, true);
  }

  async copyToClipboard(text: string): Promise<void> {
    await vscode.env.clipboard.writeText(text);
  }
}
